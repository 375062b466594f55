"""``tt.Variable``: a mutable, named array that training updates in place.

A Variable is a tnp array (a subclass of ``tnp.ndarray``), so every tnp function, operator and
NumPy call takes it directly; results computed from it are plain tnp arrays. Reading a trainable
variable inside a ``GradientTape`` watches it. ``aggregation`` and ``synchronization`` say how
distribution strategies combine its updates across replicas (as ``tf.Variable``'s do).
"""
from __future__ import annotations

import enum
import itertools
import threading

import numpy as _np

import tnp
from tnp._core.ndarray import _new, bump_version, ndarray, wrap

__all__ = ["Variable", "VariableAggregation", "VariableSynchronization"]


class VariableAggregation(enum.Enum):
    """How per-replica updates of a variable are combined (``tf.VariableAggregation``)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronised (``tf.VariableSynchronization``)."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


_uid = itertools.count()
_uid_lock = threading.Lock()


def _enum(cls, value, what):
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.upper()]
        except KeyError:
            pass
    raise ValueError(f"Variable: invalid {what} {value!r}; expected one of "
                     f"{[m.name.lower() for m in cls]}")


class Variable(ndarray):
    """Mirrors ``tf.Variable(initial_value, trainable=True, name=None, dtype=None, ...)``."""

    __slots__ = ("_name", "_trainable", "_aggregation", "_synchronization", "_uid",
                 "_constraint", "_shape_fixed")
    _subclass_results = False  # x * v is a plain tnp array, not a Variable

    def __new__(cls, initial_value, trainable=True, name=None, dtype=None, *,
                aggregation=VariableAggregation.NONE, synchronization=VariableSynchronization.AUTO,
                constraint=None, shape=None, device=None):
        if callable(initial_value) and not isinstance(initial_value, ndarray):
            initial_value = initial_value()
        value = tnp.array(initial_value, dtype=dtype, device=device, copy=True)  # owns its buffer
        synchronization = _enum(VariableSynchronization, synchronization, "synchronization")
        aggregation = _enum(VariableAggregation, aggregation, "aggregation")
        if synchronization is VariableSynchronization.ON_READ and trainable:
            raise ValueError("Variable: synchronization=ON_READ variables cannot be trainable "
                             "(pass trainable=False), as in tf.Variable")
        o = _new(cls)
        o._a = value._a
        o._dev = value._dev
        with _uid_lock:
            o._uid = next(_uid)
        o._name = name if name is not None else f"Variable:{o._uid}"
        o._trainable = bool(trainable)
        o._aggregation = aggregation
        o._synchronization = synchronization
        o._constraint = constraint
        o._shape_fixed = shape is None
        return o

    # ---------------------------------------------------------------- identity and metadata
    @property
    def name(self):
        return self._name

    @property
    def trainable(self):
        return self._trainable

    @property
    def aggregation(self):
        return self._aggregation

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def constraint(self):
        return self._constraint

    __hash__ = None  # == is element-wise, as in TF 2; use v.ref() as a dict key

    def ref(self):
        """A hashable reference to this variable (``tf.Variable.ref``), for dict keys and sets."""
        return _VariableRef(self)

    def __repr__(self):
        return (f"<tt.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_np.array2string(_np.asarray(self.numpy()), separator=', ')}>")

    __str__ = __repr__

    # ---------------------------------------------------------------- reading
    def value(self):
        """A tnp array with the variable's current value (a snapshot, not updated by assign)."""
        return wrap(self._a.copy(), self._dev)

    read_value = value

    def numpy(self):
        """The value as a NumPy array (a copy)."""
        a = self._a
        return _np.array(a if isinstance(a, _np.ndarray) else a.get(), copy=True)

    # ---------------------------------------------------------------- writing
    def _write(self, value, op, opname):
        # Not recorded by a tape (as in TF). A tape that saved the old value notices the
        # version bump and refuses to compute a gradient from it.
        v = value._a if isinstance(value, ndarray) else value
        if isinstance(value, ndarray) and value._dev is not self._dev:
            raise ValueError(f"Variable.{opname}: value on {value._dev}, variable on {self._dev}")
        if op is None:
            if _np.shape(v) != self._a.shape:
                raise ValueError(f"Variable.{opname}: cannot assign a value of shape {_np.shape(v)} "
                                 f"to variable '{self._name}' of shape {self._a.shape}")
            self._a[...] = v
        else:
            op(self._a, v, out=self._a, casting="same_kind")
        if self._constraint is not None:
            self._a[...] = tnp.asarray(self._constraint(wrap(self._a, self._dev)))._a
        bump_version(self._a)
        return self

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Write ``value`` into the variable (in place); mirrors ``tf.Variable.assign``."""
        self._write(value, None, "assign")
        return self if read_value else None

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        """Add ``delta`` in place; mirrors ``tf.Variable.assign_add``."""
        self._write(delta, _np.add, "assign_add")
        return self if read_value else None

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        """Subtract ``delta`` in place; mirrors ``tf.Variable.assign_sub``."""
        self._write(delta, _np.subtract, "assign_sub")
        return self if read_value else None

    def __reduce__(self):
        return (_rebuild_variable, (self.numpy(), str(self._dev), self._trainable, self._name,
                                    self._aggregation.name, self._synchronization.name))

    def __deepcopy__(self, memo):
        return _rebuild_variable(self.numpy(), str(self._dev), self._trainable, self._name,
                                 self._aggregation.name, self._synchronization.name)

    def __copy__(self):
        return self.__deepcopy__({})


class _VariableRef:
    __slots__ = ("_var",)

    def __init__(self, var):
        self._var = var

    def deref(self):
        return self._var

    def __hash__(self):
        return hash(self._var._uid)

    def __eq__(self, other):
        return isinstance(other, _VariableRef) and other._var is self._var

    def __repr__(self):
        return f"<Reference wrapping {self._var!r}>"


def _rebuild_variable(value, dev, trainable, name, aggregation, synchronization):
    return Variable(value, trainable=trainable, name=name, device=dev,
                    aggregation=aggregation, synchronization=synchronization)
