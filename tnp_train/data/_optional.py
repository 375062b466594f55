"""``tt.data.experimental.Optional`` and ``get_next_as_optional`` (TF 2.4's
``tf.data.experimental.Optional``, ``tf.data.experimental.get_next_as_optional``) and
``tt.data.IteratorSpec`` (the type of an iterator)."""
from __future__ import annotations

import numpy as _np

import tnp

from ..errors import InvalidArgumentError
from ..utils import tree as _tree
from . import _structure as _st

__all__ = ["Optional", "OptionalSpec", "IteratorSpec", "get_next_as_optional"]


def _check_spec(spec, who):
    _st.check_no_lists(spec, who)
    for s in _tree.flatten(spec):
        if not hasattr(s, "is_compatible_with"):
            raise TypeError(f"{who}: element_spec must be a structure of TensorSpecs, got {s!r}")


class OptionalSpec:
    """The type of an ``Optional`` (``tf.OptionalSpec``): its ``element_spec``."""

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec):
        _check_spec(element_spec, "OptionalSpec")
        self._element_spec = element_spec

    element_spec = property(lambda self: self._element_spec)

    def __eq__(self, other):
        return isinstance(other, OptionalSpec) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash(repr(self._element_spec))

    def __repr__(self):
        return f"OptionalSpec({self._element_spec!r})"


class Optional:
    """A value that may be absent (``tf.data.experimental.Optional``): make one with
    ``Optional.from_value(value)`` or ``Optional.empty(element_spec)``; ``has_value()`` is a
    0-d bool array, ``get_value()`` the value (InvalidArgumentError when there is none)."""

    __slots__ = ("_value", "_has", "_spec")

    def __init__(self, value, has_value, element_spec):
        self._value, self._has, self._spec = value, has_value, element_spec

    @staticmethod
    def from_value(value):
        """An Optional holding ``value`` (an array or a tuple/dict nest of arrays)."""
        value = _st.to_element(value, "Optional.from_value")
        return Optional(value, True, _st.spec_of(value))

    @staticmethod
    def empty(element_spec):
        """An Optional with no value, of the type ``element_spec``."""
        _check_spec(element_spec, "Optional.empty")
        return Optional(None, False, element_spec)

    def has_value(self, name=None):
        """Whether this holds a value, as a 0-d bool array."""
        return tnp.asarray(_np.bool_(self._has))

    def get_value(self, name=None):
        """The value; InvalidArgumentError when there is none (TF's words)."""
        if not self._has:
            raise InvalidArgumentError("The given optional does not have a value.")
        return self._value

    @property
    def element_spec(self):
        return self._spec

    @property
    def _type_spec(self):
        return OptionalSpec(self._spec)

    def __repr__(self):
        return f"<Optional has_value={self._has} element_spec={self._spec!r}>"


def get_next_as_optional(iterator):
    """The next element of ``iterator`` as an ``Optional``, empty at the end
    (``tf.data.experimental.get_next_as_optional``; also ``iterator.get_next_as_optional()``)."""
    spec = getattr(iterator, "element_spec", None)
    if spec is None or not hasattr(iterator, "__next__"):
        raise TypeError(f"get_next_as_optional: expected a tt.data Iterator, got "
                        f"{type(iterator).__name__}")
    try:
        value = next(iterator)
    except StopIteration:
        return Optional.empty(spec)
    return Optional(value, True, spec)


class IteratorSpec:
    """The type of a dataset's iterator (``tf.data.IteratorSpec(element_spec)``); equal to
    ``iter(ds)._type_spec`` for a dataset of that ``element_spec``."""

    __slots__ = ("_element_spec",)

    def __init__(self, element_spec):
        _check_spec(element_spec, "IteratorSpec")
        self._element_spec = element_spec

    element_spec = property(lambda self: self._element_spec)

    @staticmethod
    def from_value(value):
        """The IteratorSpec of an iterator."""
        return IteratorSpec(value.element_spec)

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, IteratorSpec) else \
            IteratorSpec.from_value(spec_or_value)
        try:
            _tree.assert_same_structure(self._element_spec, other._element_spec)
        except (TypeError, ValueError):
            return False
        return all(a.is_compatible_with(b) for a, b in zip(
            _tree.flatten(self._element_spec), _tree.flatten(other._element_spec)))

    def __eq__(self, other):
        return isinstance(other, IteratorSpec) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash(repr(self._element_spec))

    def __repr__(self):
        return f"IteratorSpec({self._element_spec!r})"
