"""``tt.sparse``: ``SparseTensor`` (TF's ``tf.sparse.SparseTensor``) and ``to_dense``, the form
``tt.io.parse_example`` gives a ``VarLenFeature`` in.

A ``SparseTensor`` is three tnp arrays (``indices`` int64 ``(N, rank)``, ``values`` ``(N,)``,
``dense_shape`` int64 ``(rank,)``), not an array: tnp has no sparse arrays, so operations take
``tt.sparse.to_dense(sp)`` (or the three parts). It may be a component of a ``tt.data``
element (``SparseTensorSpec``), but ``batch`` does not combine SparseTensors.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp import ndarray as _ndarray
from tnp.extend import backend_array as _backend

__all__ = ["SparseTensor", "SparseTensorSpec", "to_dense"]


def _host(x):
    if isinstance(x, _ndarray):
        return _np.asarray(_backend(x)) if x.device == tnp.device("cpu") else x.numpy()
    return _np.asarray(x)


class SparseTensor:
    """Mirrors ``tf.sparse.SparseTensor(indices, values, dense_shape)``: the nonzero entries of
    a ``dense_shape`` array, ``values[i]`` at ``indices[i]`` (in row-major order)."""

    __slots__ = ("_indices", "_values", "_dense_shape")

    def __init__(self, indices, values, dense_shape):
        indices = _host(indices)
        values = values if isinstance(values, _ndarray) else tnp.asarray(values)
        dense_shape = _host(dense_shape)
        if dense_shape.ndim != 1:
            raise ValueError("SparseTensor: dense_shape must be 1-d, got shape "
                             f"{dense_shape.shape}")
        if indices.ndim != 2 or indices.shape[1] != dense_shape.shape[0] \
                or values.ndim != 1 or values.shape[0] != indices.shape[0]:
            raise ValueError(f"SparseTensor: indices {indices.shape}, values {values.shape} and "
                             f"dense_shape {dense_shape.shape} do not fit: expected (N, rank), "
                             "(N,) and (rank,)")
        self._indices = tnp.asarray(indices.astype(_np.int64, copy=False))
        self._values = values
        self._dense_shape = tnp.asarray(dense_shape.astype(_np.int64, copy=False))

    indices = property(lambda self: self._indices, doc="int64 ``(N, rank)``")
    values = property(lambda self: self._values, doc="``(N,)``")
    dense_shape = property(lambda self: self._dense_shape, doc="int64 ``(rank,)``")
    dtype = property(lambda self: self._values.dtype, doc="the values' dtype")

    @property
    def shape(self):
        """The dense shape as a tuple of ints."""
        return tuple(int(d) for d in _host(self._dense_shape))

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a SparseTensor is not an array: use tt.sparse.to_dense(sp) (or its "
                        "indices, values and dense_shape)")

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")


class SparseTensorSpec:
    """Mirrors ``tf.SparseTensorSpec(shape, dtype)``: the type of a ``SparseTensor`` component
    of a dataset element (its dense shape, ``None`` for a dimension that varies)."""

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape=None, dtype="float32"):
        self._shape = None if shape is None else tuple(None if d is None else int(d)
                                                       for d in shape)
        self._dtype = _np.dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    @classmethod
    def from_value(cls, value):
        """The spec of a ``SparseTensor``."""
        return cls(value.shape, value.dtype)

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and (self._shape, self._dtype) == \
            (other._shape, other._dtype)

    def __hash__(self):
        return hash((self._shape, self._dtype))

    def __repr__(self):
        return f"SparseTensorSpec(shape={self._shape}, dtype={self._dtype.name})"


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """Mirrors ``tf.sparse.to_dense``: the dense array of ``sp_input``, ``default_value`` (0,
    or ``b""`` for strings) where it has no entry. With ``validate_indices`` an index out of
    the shape or repeated raises ValueError (TF: InvalidArgumentError)."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sparse.to_dense: expected a SparseTensor, got "
                        f"{type(sp_input).__name__}")
    values = _host(sp_input.values)
    shape = sp_input.shape
    idx = _host(sp_input.indices)
    if default_value is None:
        default_value = b"" if values.dtype.kind == "S" else 0
    out = _np.full(shape, default_value, dtype=values.dtype)
    if validate_indices and len(idx):
        if (idx < 0).any() or (idx >= _np.asarray(shape, dtype=_np.int64)).any():
            raise ValueError(f"sparse.to_dense: an index is out of the dense shape {shape}")
        if len(_np.unique(idx, axis=0)) != len(idx):
            raise ValueError("sparse.to_dense: indices repeat")
    if len(idx):
        out[tuple(idx.T)] = values
    return tnp.asarray(out)
