"""Nested element structures and ``TensorSpec`` for ``tt.data``.

An element is a tnp array or a nest of them: tuples (namedtuples included) and dicts, as in
``tf.nest``. Lists are not structure: as in ``tf.data``, a list given as data is converted to an
array, and a list returned by a ``map`` function becomes a tuple. Dict entries are flattened in
sorted key order (``tf.nest``'s rule), so two dicts with the same keys flatten alike whatever
their insertion order.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp import ndarray as _ndarray

__all__ = ["TensorSpec", "flatten", "pack", "map_structure", "is_nested", "to_element",
           "normalize_fn_output", "assert_same_structure", "packer", "spec_of", "structure_repr"]


# --------------------------------------------------------------------------- nest helpers
def is_nested(x):
    return isinstance(x, (tuple, dict))


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:  # keys of mixed, unorderable types: insertion order
        return list(d)


def flatten(x):
    """The leaves of ``x`` in ``tf.nest`` order."""
    if type(x) is tuple:
        for v in x:
            if isinstance(v, (tuple, dict)):
                break
        else:
            return list(x)
    if isinstance(x, tuple):
        out = []
        for v in x:
            if isinstance(v, (tuple, dict)):
                out.extend(flatten(v))
            else:
                out.append(v)
        return out
    if isinstance(x, dict):
        out = []
        for k in _sorted_keys(x):
            v = x[k]
            if isinstance(v, (tuple, dict)):
                out.extend(flatten(v))
            else:
                out.append(v)
        return out
    return [x]


def _pack(template, it):
    if isinstance(template, tuple):
        vals = [_pack(v, it) for v in template]
        if type(template) is tuple:
            return tuple(vals)
        return type(template)(*vals)  # namedtuple
    if isinstance(template, dict):
        packed = {k: _pack(template[k], it) for k in _sorted_keys(template)}
        return type(template)((k, packed[k]) for k in template)
    return next(it)


def pack(template, leaves):
    """Rebuild ``template``'s structure from ``leaves`` (in :func:`flatten` order)."""
    if not isinstance(template, (tuple, dict)):
        return leaves[0]
    return _pack(template, iter(leaves))


def packer(template):
    """A function ``leaves -> structure`` for ``template`` (``tuple`` itself for a flat tuple)."""
    if not isinstance(template, (tuple, dict)):
        return lambda leaves: leaves[0]
    if type(template) is tuple and not any(isinstance(v, (tuple, dict)) for v in template):
        return tuple
    return lambda leaves: _pack(template, iter(leaves))


def map_structure(fn, *structs):
    """``fn`` applied leaf-wise to structures of the same shape."""
    first = structs[0]
    for s in structs[1:]:
        assert_same_structure(first, s)
    flats = [flatten(s) for s in structs]
    return pack(first, [fn(*xs) for xs in zip(*flats)])


def _shape_of_structure(x):
    if isinstance(x, tuple):
        return (type(x) if type(x) is not tuple else tuple, tuple(_shape_of_structure(v) for v in x))
    if isinstance(x, dict):
        return (dict, tuple((k, _shape_of_structure(x[k])) for k in _sorted_keys(x)))
    return None


def assert_same_structure(a, b, what="structures"):
    """TypeError when ``a`` and ``b`` are not nested alike (the leaves are not compared)."""
    if _shape_of_structure(a) != _shape_of_structure(b):
        raise TypeError(f"{what} do not have the same nested structure: "
                        f"{structure_repr(a)} vs {structure_repr(b)}")


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
    if isinstance(x, _ndarray):
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
    if isinstance(element, _ndarray):
        return TensorSpec(element.shape, element.dtype)
    if isinstance(element, tuple):
        vals = [spec_of(v) for v in element]
        return tuple(vals) if type(element) is tuple else type(element)(*vals)
    if isinstance(element, dict):
        return type(element)((k, spec_of(v)) for k, v in element.items())
    return TensorSpec.from_tensor(element)
