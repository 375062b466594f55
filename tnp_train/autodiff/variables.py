"""``tt.Variable``: a mutable, named array that training updates in place.

A Variable is a tnp array (a subclass of ``tnp.ndarray``), so every tnp function, operator and
NumPy call takes it directly; results computed from it are plain tnp arrays. Reading a trainable
variable inside a ``GradientTape`` watches it. ``aggregation`` and ``synchronization`` say how
distribution strategies combine its updates across replicas (as ``tf.Variable``'s do).

Two seams let a distribution strategy take variables over without touching the code that uses
them:

* **creation**: ``tt.Variable(...)`` asks the creators of the active
  :func:`variable_creator_scope` blocks (``tf.variable_creator_scope``) to make the variable, so
  a strategy can return a mirrored or server-held Variable subclass. Every variable tnp_train
  makes (layer weights, optimizer slots and state, metric state, ...) is made this way.
* **writes**: every in-place write goes through :meth:`Variable.update` (``assign``,
  ``assign_add`` and ``assign_sub`` do too), so a subclass that overrides that one method sees
  every update: it can run it on each replica's copy or send it to the rank that owns it.
"""
from __future__ import annotations

import contextlib
import enum
import inspect
import itertools
import threading

import numpy as _np

import tnp
from tnp.extend import (
    backend_array as _backend, bump_version as _bump, device_of as _device_of, effect as _effect,
    is_tnp_array as _is_tnp, tracing as _tracing, wrap as _wrap)

__all__ = ["Variable", "VariableAggregation", "VariableSynchronization",
           "variable_creator_scope"]


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
_ndarray = tnp.ndarray


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


# ---------------------------------------------------------------- variable creators
# Thread-local as TF's creator stack is (per graph and thread): a MirroredStrategy replica thread
# installs the stack of the thread that started it (current_creators / creator_stack).
_local = threading.local()


class variable_creator_scope:
    """Mirrors ``tf.variable_creator_scope(variable_creator)``: inside the block, ``tt.Variable(
    ...)`` calls ``variable_creator(next_creator, **kwargs)`` with every keyword argument of the
    call (defaults filled in); it returns a Variable, usually ``next_creator(**kwargs)``. Nested
    scopes compose: the innermost creator is called first and its ``next_creator`` is the next
    outer one. The stack is per thread."""

    __slots__ = ("_creator", "_old", "_new")

    def __init__(self, variable_creator):
        if not callable(variable_creator):
            raise TypeError(f"variable_creator_scope: the creator must be callable, got "
                            f"{type(variable_creator).__name__}")
        self._creator = variable_creator
        self._old = self._new = None

    def __enter__(self):
        self._old = getattr(_local, "creators", ())
        self._new = self._old + (self._creator,)
        _local.creators = self._new
        return self

    def __exit__(self, *exc):
        if getattr(_local, "creators", ()) is not self._new:
            raise RuntimeError("variable_creator_scope: scopes exited out of order (they must "
                               "nest)")
        _local.creators = self._old
        return False


def current_creators():
    """The creators active on this thread, outermost first (for a strategy to hand to the
    threads it starts, with :func:`creator_stack`)."""
    return getattr(_local, "creators", ())


@contextlib.contextmanager
def creator_stack(creators):
    """Run the block with exactly ``creators`` (outermost first) active on this thread."""
    old = getattr(_local, "creators", ())
    _local.creators = tuple(creators)
    try:
        yield
    finally:
        _local.creators = old


def _chain(creator, next_creator):
    def call(**kwargs):
        v = creator(next_creator, **kwargs)
        if not isinstance(v, Variable):
            raise TypeError(f"variable_creator_scope: the creator {creator!r} returned "
                            f"{type(v).__name__}, not a tt.Variable (for variable "
                            f"{kwargs.get('name')!r})")
        return v
    return call


class _VariableMeta(type):
    # tt.Variable(...) asks the active creators (TF's VariableMetaclass does the same); a
    # subclass is constructed as asked, which is how a creator builds its own variable type
    def __call__(cls, *args, **kwargs):
        creators = getattr(_local, "creators", None)
        if not creators or cls is not Variable:
            return super().__call__(*args, **kwargs)
        try:
            bound = _SIGNATURE.bind(cls, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"Variable: {e}") from None
        bound.apply_defaults()
        kw = dict(bound.arguments)
        del kw["cls"]
        make = default_variable_creator
        for c in creators:
            make = _chain(c, make)
        return make(**kw)


def default_variable_creator(**kwargs):
    """The last creator of every chain: a plain ``tt.Variable`` made from ``kwargs``."""
    return type.__call__(Variable, **kwargs)


def _as_shape(shape):
    """``shape=`` as a tuple of ints and Nones (TF's ``TensorShape``: an int is one dimension)."""
    dims = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    for d in dims:
        if d is not None and (isinstance(d, (bool, _np.bool_)) or
                              not isinstance(d, (int, _np.integer))):
            raise TypeError(f"Variable: shape must hold ints and None, got {shape!r}")
        if d is not None and d < 0:
            raise ValueError(f"Variable: shape {shape!r}: dimension {d} must be >= 0")
    return tuple(None if d is None else int(d) for d in dims)


def _compatible(spec, shape):
    """Whether a concrete ``shape`` fits the declared ``spec`` (``TensorShape.is_compatible_with``)."""
    return len(spec) == len(shape) and all(s is None or s == n for s, n in zip(spec, shape))


class Variable(tnp.ndarray, metaclass=_VariableMeta):
    """Mirrors ``tf.Variable(initial_value, trainable=True, name=None, dtype=None, ...,
    shape=None)``.

    ``key`` (beyond TF): an int, unique among the variables of the process and fixed for the
    variable's life, by which other code indexes it (never assign it).

    ``shape``: the initial value must be compatible with it (``None`` entries match any size),
    else ValueError, as in TF. Differs from TF: a variable keeps its initial value's shape (its
    buffer is updated in place), so ``None`` entries do not let ``assign`` change the shape, and
    TF's unknown rank (``tf.TensorShape(None)``) has no equivalent."""

    __slots__ = ("_name", "_trainable", "_aggregation", "_synchronization", "_uid",
                 "_constraint")
    _subclass_results = False  # x * v is a plain tnp array, not a Variable

    def __new__(cls, initial_value, trainable=True, name=None, dtype=None, *,
                aggregation=VariableAggregation.NONE, synchronization=VariableSynchronization.AUTO,
                constraint=None, shape=None, device=None):
        if callable(initial_value) and not _is_tnp(initial_value):
            initial_value = initial_value()
        value = tnp.array(initial_value, dtype=dtype, device=device, copy=True)  # owns its buffer
        spec = None if shape is None else _as_shape(shape)
        if spec is not None and not _compatible(spec, value.shape):
            raise ValueError(f"Variable: the initial value's shape {tuple(value.shape)} is not "
                             f"compatible with the explicitly supplied `shape` argument {spec}")
        synchronization = _enum(VariableSynchronization, synchronization, "synchronization")
        aggregation = _enum(VariableAggregation, aggregation, "aggregation")
        if synchronization is VariableSynchronization.ON_READ and trainable:
            raise ValueError("Variable: synchronization=ON_READ variables cannot be trainable "
                             "(pass trainable=False), as in tf.Variable")
        o = _wrap(_backend(value), _device_of(value), cls=cls)
        with _uid_lock:
            o._uid = next(_uid)
        o._name = name if name is not None else f"Variable:{o._uid}"
        o._trainable = bool(trainable)
        o._aggregation = aggregation
        o._synchronization = synchronization
        o._constraint = constraint
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
        return _wrap(_backend(self).copy(), _device_of(self))

    read_value = value

    def numpy(self):
        """The value as a NumPy array (a copy)."""
        a = _backend(self)
        return _np.array(a if isinstance(a, _np.ndarray) else a.get(), copy=True)

    # ---------------------------------------------------------------- writing
    def update(self, fn, *args, constrain=True):
        """Write into the variable in place: THE entry point of every write (no TF analogue;
        TF's strategies use ``extended.update(var, fn, args)``).

        Calls ``fn(a, *args)`` once, where ``a`` is this variable's backend array (NumPy or
        CuPy) and every tnp array among ``args`` (Variables -- the slots an optimizer writes --
        and read-only values such as a gradient) is replaced by its backend array; ``fn``
        writes ``a`` and the Variables' arrays in place. Then the variable's constraint is
        applied (unless ``constrain=False``) and the version of this variable and of every
        Variable among ``args`` is bumped, so a tape that saved an old value refuses a gradient
        through it. Not recorded by a tape (as TF's writes). A distributed variable overrides
        this one method (``assign*`` go through it) to run ``fn`` on every replica's copy, or on
        the rank that owns the variable.
        """
        if _tracing():
            # inside a function being compiled: the write happens at every call of the compiled
            # function, with that call's values (never now, with the placeholders' dummies)
            _effect(Variable._update_now, self, fn, args, constrain)
            return self
        return self._update_now(fn, args, constrain)

    def _update_now(self, fn, args, constrain):
        written = ()
        if args:
            # per step and variable: kept to builtins (isinstance) where the common argument
            # (a float, None) needs nothing
            unwrapped = []
            for x in args:
                if isinstance(x, _ndarray):
                    if isinstance(x, Variable):
                        written += (x,)
                    x = _backend(x)
                unwrapped.append(x)
            args = unwrapped
        a = _backend(self)
        fn(a, *args)
        if constrain and self._constraint is not None:
            dev = _device_of(self)
            a[...] = _backend(tnp.asarray(self._constraint(_wrap(a, dev)), device=dev))
        _bump(a)
        for w in written:
            _bump(w)
        return self

    def _write(self, value, fn, opname):
        if _is_tnp(value):
            if _device_of(value) is not _device_of(self):
                raise ValueError(f"Variable.{opname}: value on {_device_of(value)}, variable "
                                 f"'{self._name}' on {_device_of(self)}")
            if isinstance(value, Variable):
                # a value read, not written: a plain array over its buffer keeps update() from
                # counting a write into it
                value = _wrap(_backend(value), _device_of(value))
        if fn is _assign_into and _np.shape(value) != self.shape:
            raise ValueError(f"Variable.{opname}: cannot assign a value of shape "
                             f"{_np.shape(value)} to variable '{self._name}' of shape "
                             f"{self.shape}")
        return self.update(fn, value)

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Write ``value`` into the variable (in place); mirrors ``tf.Variable.assign`` (the
        variable's constraint is applied to the result, which TF leaves to the optimizer)."""
        self._write(value, _assign_into, "assign")
        return self if read_value else None

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        """Add ``delta`` in place; mirrors ``tf.Variable.assign_add``."""
        self._write(delta, _add_into, "assign_add")
        return self if read_value else None

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        """Subtract ``delta`` in place; mirrors ``tf.Variable.assign_sub``."""
        self._write(delta, _sub_into, "assign_sub")
        return self if read_value else None

    def __reduce__(self):
        return (_rebuild_variable, (self.numpy(), str(_device_of(self)), self._trainable,
                                    self._name, self._aggregation.name,
                                    self._synchronization.name))

    def __deepcopy__(self, memo):
        return _rebuild_variable(self.numpy(), str(_device_of(self)), self._trainable, self._name,
                                 self._aggregation.name, self._synchronization.name)

    def __copy__(self):
        return self.__deepcopy__({})


# ``Variable.key``: an int, unique among the variables of this process and fixed for the
# variable's life (no TF analogue), by which other code indexes a variable (an optimizer's
# slots, a strategy's gradient buckets, ``ref()``'s hash). Read it, never assign it. It is the
# ``_uid`` slot under its public name: read per variable and step by optimizers and
# strategies, it costs what a slot costs (a property costs 5 times as much). A subclass standing
# for a variable of another process (a parameter server's handle) overrides it with that
# variable's key.
Variable.key = Variable.__dict__["_uid"]

_SIGNATURE = inspect.signature(Variable.__new__)


def _assign_into(a, v):
    a[...] = v


def _add_into(a, v):
    _np.add(a, v, out=a, casting="same_kind")


def _sub_into(a, v):
    _np.subtract(a, v, out=a, casting="same_kind")


class _VariableRef:
    __slots__ = ("_var",)

    def __init__(self, var):
        self._var = var

    def deref(self):
        return self._var

    def __hash__(self):
        return hash(self._var.key)

    def __eq__(self, other):
        return isinstance(other, _VariableRef) and other._var is self._var

    def __repr__(self):
        return f"<Reference wrapping {self._var!r}>"


def _rebuild_variable(value, dev, trainable, name, aggregation, synchronization):
    return Variable(value, trainable=trainable, name=name, device=dev,
                    aggregation=aggregation, synchronization=synchronization)
