"""Element structures and ``TensorSpec`` for ``tt.data``.

An element is a tnp array or a nest of them: tuples (namedtuples included) and dicts, walked by
:mod:`tnp_train.utils.tree` (``tf.nest``'s rules: dict entries in sorted key order). Lists are
not structure: as in ``tf.data``, a list given as data is converted to an array, and a list
returned by a ``map`` function becomes a tuple, so no element or spec holds a list.
"""
from __future__ import annotations

import functools
import operator

import numpy as _np

import tnp
from tnp import ndarray as _ndarray

from ..sparse import SparseTensor as _SparseTensor, SparseTensorSpec as _SparseTensorSpec
from ..utils import tree as _tree

__all__ = ["TensorSpec", "to_element", "normalize_fn_output", "check_same_structure",
           "flatten_up_to", "check_no_lists", "packer", "spec_of", "structure_repr"]


# --------------------------------------------------------------------------- structures
def packer(template):
    """A function ``leaves -> structure`` for ``template`` (``tuple`` itself for a flat tuple)."""
    if not _tree.is_nested(template):
        return operator.itemgetter(0)
    if type(template) is tuple and not any(_tree.is_nested(v) for v in template):
        return tuple
    return functools.partial(_tree.pack_sequence_as, template)


def check_same_structure(a, b, what):
    """TypeError when ``a`` and ``b`` are not nested alike (``tf.data`` raises TypeError for
    any such mismatch); the leaves are not compared."""
    try:
        _tree.assert_same_structure(a, b)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} do not have the same nested structure: "
                        f"{structure_repr(a)} vs {structure_repr(b)} ({e})") from None


def flatten_up_to(template, value, what):
    """``value`` flattened down to ``template``'s leaves, whatever it holds below them (shapes
    given as tuples or lists); a list stands for a tuple of ``template``."""
    try:
        return _tree.flatten_up_to(template, value, check_types=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: expected a structure like {structure_repr(template)}, got "
                        f"{value!r} ({e})") from None


def check_no_lists(structure, what):
    """TypeError for a list in ``structure`` (of datasets, specs or dtypes): ``tf.data`` takes
    a list for a value, never for a structure; a tuple is one."""
    if isinstance(structure, list):
        raise TypeError(f"{what}: nested structures do not support Python lists; use a tuple "
                        f"instead (got a list of {len(structure)})")
    if isinstance(structure, (tuple, dict)):
        for v in (structure.values() if isinstance(structure, dict) else structure):
            check_no_lists(v, what)


def structure_repr(x):
    if isinstance(x, tuple):
        return "(" + ", ".join(structure_repr(v) for v in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {structure_repr(v)}" for k, v in x.items()) + "}"
    if isinstance(x, TensorSpec):
        return repr(x)
    return "." if x is not None else "None"


# --------------------------------------------------------------------------- conversion
def to_leaf(x, what="element"):
    """One leaf as a tnp array (tnp arrays pass through; NumPy arrays and scalars, Python
    numbers and lists are converted as ``tnp.asarray`` does)."""
    if isinstance(x, (_ndarray, _SparseTensor)):   # a SparseTensor is a component, as in TF
        return x
    if x is None:
        raise TypeError(f"{what}: None is not a valid component (expected an array)")
    try:
        return tnp.asarray(x)
    except Exception as e:  # pragma: no cover - unusual inputs
        raise TypeError(f"{what}: cannot convert {type(x).__name__} to an array ({e})") from e


def to_element(x, what="element"):
    """A user structure with every leaf converted by :func:`to_leaf`."""
    if isinstance(x, _ndarray):
        return x
    if isinstance(x, tuple):
        vals = [to_element(v, what) for v in x]
        return tuple(vals) if type(x) is tuple else type(x)(*vals)
    if isinstance(x, dict):
        return type(x)((k, to_element(v, what)) for k, v in x.items())
    return to_leaf(x, what)


def normalize_fn_output(x, what="map function"):
    """A user function's return value as an element: lists become tuples (as ``tf.data``),
    leaves become tnp arrays."""
    if isinstance(x, _ndarray):
        return x
    if type(x) is tuple:
        for v in x:
            if not isinstance(v, _ndarray):
                break
        else:
            return x
    if x is None:
        raise TypeError(f"{what} returned None; it must return an array or a tuple/dict of arrays")
    if type(x) is list:
        x = tuple(x)
    if isinstance(x, tuple):
        vals = [normalize_fn_output(v, what) for v in x]
        return tuple(vals) if type(x) is tuple else type(x)(*vals)
    if isinstance(x, dict):
        return type(x)((k, normalize_fn_output(v, what)) for k, v in x.items())
    return to_leaf(x, what)


# --------------------------------------------------------------------------- TensorSpec
def _as_dtype(d):
    if d is None:
        return None
    if isinstance(d, _np.dtype):
        return d
    return _np.dtype(d)


def _as_shape(s):
    """``None`` (unknown rank) or a tuple of ints and ``None`` (unknown dims; -1 also means
    unknown)."""
    if s is None:
        return None
    if isinstance(s, (int, _np.integer)):
        s = (s,)
    out = []
    for d in s:
        if d is None or (isinstance(d, (int, _np.integer)) and int(d) == -1):
            out.append(None)
        elif isinstance(d, (int, _np.integer)) and int(d) >= 0:
            out.append(int(d))
        else:
            raise ValueError(f"invalid dimension {d!r} in shape {s!r}")
    return tuple(out)


class TensorSpec:
    """The type of one component of a dataset element (``tf.TensorSpec``).

    ``shape`` is a tuple whose entries are ints or ``None`` (a dimension that may vary, such as
    the batch dimension of a ``batch`` without ``drop_remainder``), or ``None`` for an unknown
    rank. ``dtype`` is a NumPy dtype.
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype="float32", name=None):
        self._shape = _as_shape(shape)
        self._dtype = _as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        a = to_leaf(tensor)
        return cls(a.shape, a.dtype, name)

    @property
    def rank(self):
        return None if self._shape is None else len(self._shape)

    def _shape_compatible(self, shape):
        if self._shape is None or shape is None:
            return True
        if len(self._shape) != len(shape):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._shape, shape))

    def is_compatible_with(self, spec_or_value):
        """Whether a value or spec fits this spec (dtype equal, shapes compatible)."""
        if isinstance(spec_or_value, TensorSpec):
            other = spec_or_value
        else:
            other = TensorSpec.from_tensor(spec_or_value)
        if self._dtype is not None and other._dtype is not None and self._dtype != other._dtype:
            return False
        return self._shape_compatible(other._shape)

    def most_specific_compatible_type(self, other):
        """The spec both fit: dims that differ become ``None`` (TypeError if dtypes differ)."""
        if self._dtype != other._dtype:
            raise TypeError(f"incompatible dtypes {self._dtype} and {other._dtype}")
        if self._shape is None or other._shape is None or len(self._shape) != len(other._shape):
            shape = None
        else:
            shape = tuple(a if a == b else None for a, b in zip(self._shape, other._shape))
        return TensorSpec(shape, self._dtype)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._shape == other._shape
                and self._dtype == other._dtype and self._name == other._name)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        shape = "<unknown>" if self._shape is None else repr(self._shape)
        dtype = None if self._dtype is None else self._dtype.name
        return f"TensorSpec(shape={shape}, dtype={dtype}, name={self._name!r})"


def spec_of(element):
    """The ``TensorSpec`` structure of a concrete element."""
    return _tree.map_structure(_spec_of_leaf, element)


def _spec_of_leaf(x):
    if isinstance(x, _ndarray):
        return TensorSpec(x.shape, x.dtype)
    if isinstance(x, _SparseTensor):
        return _SparseTensorSpec.from_value(x)
    return TensorSpec.from_tensor(x)
