"""Variables of a strategy with several replicas in one process (TF 2.4's ``MirroredVariable``
and ``SyncOnReadVariable``): one copy (*component*) per local replica, each on its replica's
device, behind one ``tt.Variable`` object.

Which component an access sees depends on the thread: a replica thread of the owning strategy
(marked by :func:`replica_scope`) reads and writes its own component, so a model, its optimizer
and its metrics are shared Python objects while every replica computes on its own copy of the
state; any other thread (the cross-replica context) sees

* a mirrored variable (``synchronization`` AUTO/ON_WRITE): component 0 for reads; a write goes
  to every component (``assign`` in cross-replica context, a checkpoint restore), each on its
  device, so the copies stay equal;
* a sync-on-read variable (ON_READ: metric totals and counts, BatchNormalization's moving
  statistics): the components combined by the variable's ``aggregation`` (SUM, MEAN, the first
  replica's) for reads; a write of ``value`` makes that combination read ``value`` (SUM: the
  first component holds it, the others zero -- exact for integer counts, where TF divides
  ``value`` by the replicas).

A tnp array's fields are read as attributes (``backend_array(x)``, ``device_of(x)``), so the
per-thread choice is two properties and costs nothing to variables of one replica. Training
writes only through :meth:`tt.Variable.update`, which the properties route to the calling
replica's component; the optimizer's identical updates on identical (all-reduced) gradients keep
the mirrored copies equal, as TF's MirroredStrategy does.
"""
from __future__ import annotations

import contextlib
import threading

from tnp.extend import backend_array, bump_version, device_of, is_tnp_array, wrap

from ..autodiff import Variable, VariableAggregation, VariableSynchronization

__all__ = ["DistributedVariable", "MirroredVariable", "SyncOnReadVariable", "replica_scope",
           "current_replica", "make_distributed"]

_tls = threading.local()


def current_replica():
    """``(extended, local index)`` of the replica this thread runs, or None (cross-replica)."""
    return getattr(_tls, "replica", None)


@contextlib.contextmanager
def replica_scope(extended, index):
    """Run the block as local replica ``index`` of ``extended`` (None: cross-replica)."""
    old = getattr(_tls, "replica", None)
    _tls.replica = None if extended is None else (extended, index)
    try:
        yield
    finally:
        _tls.replica = old


def _to(x, dev):
    """Backend array or tnp array ``x`` as a backend array on ``dev`` (a copy when it moves)."""
    if is_tnp_array(x):
        if device_of(x) is not dev:
            x = x.to_device(dev)
        return backend_array(x)
    return x


class DistributedVariable(Variable):
    """A ``tt.Variable`` with one component per local replica of its strategy (see the module
    docstring). ``values`` is the tuple of components as tnp arrays, replica 0's first."""

    __slots__ = ("_components", "_devices", "_owner", "_override")

    # -- the two fields every tnp function reads -------------------------------------------
    def _index(self):
        r = getattr(_tls, "replica", None)
        if r is not None and r[0] is self._owner:
            return r[1]
        return None

    def _get_a(self):
        r = getattr(_tls, "replica", None)
        if r is not None and r[0] is self._owner:
            return self._components[r[1]]
        return self._cross_replica_array()

    def _set_a(self, a):
        try:
            comps = self._components
        except AttributeError:           # wrap(cls=...) setting the first component
            self._components = [a]
            return
        i = self._index()
        if i is not None:
            comps[i] = a
            return
        self._assign_components(a, rebind=True)

    _a = property(_get_a, _set_a)

    def _get_dev(self):
        r = getattr(_tls, "replica", None)
        if r is not None and r[0] is self._owner:
            return self._devices[r[1]]
        return self._devices[0]

    def _set_dev(self, dev):
        if not hasattr(self, "_devices"):
            self._devices = (dev,)

    _dev = property(_get_dev, _set_dev)

    # -- cross-replica behaviour (subclasses) ------------------------------------------------
    def _cross_replica_array(self):
        return self._components[0]

    def _assign_components(self, a, rebind=False):
        """Make every component equal ``a`` (a backend array), each on its device."""
        for i, dev in enumerate(self._devices):
            c = self._components[i]
            src = a if i == 0 else _to(wrap(a, self._devices[0]), dev)
            if rebind:
                self._components[i] = src if i == 0 else src.copy()
            else:
                c[...] = src
                bump_version(c)

    # -- public ------------------------------------------------------------------------------
    @property
    def values(self):
        """The components as tnp arrays over their buffers, replica 0's first."""
        return tuple(wrap(c, d) for c, d in zip(self._components, self._devices))

    @property
    def devices(self):
        return tuple(str(d) for d in self._devices)

    @property
    def distribute_strategy(self):
        return self._owner._container_strategy()

    def update(self, fn, *args, constrain=True):
        """In a replica thread: ``fn`` on that replica's component. In cross-replica context:
        ``fn`` on every component in turn (arguments moved to its device; Variables among them
        resolve to their own component), as TF's ``extended.update`` does."""
        if self._index() is not None:
            return Variable.update(self, fn, *args, constrain=constrain)
        return self._update_each(fn, args, constrain)

    def _update_each(self, fn, args, constrain, only=None):
        owner = self._owner
        for i, dev in enumerate(self._devices):
            if only is not None and i not in only:
                continue
            moved = [x if isinstance(x, Variable) or not is_tnp_array(x) else _moved(x, dev)
                     for x in args]
            with replica_scope(owner, i):
                Variable.update(self, fn, *moved, constrain=constrain)
        return self

    def __repr__(self):
        kind = type(self).__name__
        return (f"<tt.distribute.{kind} '{self._name}' shape={self.shape} "
                f"dtype={self.dtype.name} devices={list(self.devices)}>")

    __str__ = __repr__


def _moved(x, dev):
    return x if device_of(x) is dev else x.to_device(dev)


class MirroredVariable(DistributedVariable):
    """Mirrors TF's ``MirroredVariable``: equal copies on every local replica's device."""

    __slots__ = ()


class SyncOnReadVariable(DistributedVariable):
    """Mirrors TF's ``SyncOnReadVariable``: each replica updates its own copy; a read in
    cross-replica context combines them by ``aggregation``."""

    __slots__ = ()

    def _cross_replica_array(self):
        ov = self._override
        if ov is not None:
            return ov
        comps = self._components
        agg = self._aggregation
        if agg is VariableAggregation.ONLY_FIRST_REPLICA or agg is VariableAggregation.NONE \
                or len(comps) == 1:
            return comps[0]
        total = self._local_sum()
        if agg is VariableAggregation.MEAN:
            total = (total / len(comps)).astype(comps[0].dtype, copy=False)
        return total

    def _local_sum(self):
        """The components summed, on replica 0's device (a new backend array; backend
        arithmetic, so a tape recording in this thread sees no op)."""
        d0 = self._devices[0]
        total = self._components[0].copy()
        for c, d in zip(self._components[1:], self._devices[1:]):
            total += _to(wrap(c, d), d0)
        return total

    def local_contribution(self):
        """What this process adds to a cross-worker reduction: the components' sum (SUM and
        MEAN: the caller divides by the global number of replicas), replica 0's otherwise."""
        if self._aggregation in (VariableAggregation.SUM, VariableAggregation.MEAN):
            return self._local_sum()
        return self._components[0].copy()

    def _assign_components(self, a, rebind=False):
        if self._aggregation is not VariableAggregation.SUM:
            return DistributedVariable._assign_components(self, a, rebind)
        # the sum reads `a`: the first copy holds it, the others are zero
        for i, dev in enumerate(self._devices):
            if i == 0:
                if rebind:
                    self._components[0] = a
                else:
                    self._components[0][...] = a
                    bump_version(self._components[0])
                continue
            if rebind:
                self._components[i] = _to(wrap(a, self._devices[0]), dev).copy()
                self._components[i][...] = 0
            else:
                self._components[i][...] = 0
                bump_version(self._components[i])

    def update(self, fn, *args, constrain=True):
        """As a mirrored variable's, except that with ``aggregation=SUM`` a cross-replica
        write of an increment or a value goes to the first copy only (the sum reads it) and
        the others are zeroed: ``assign(v)`` reads back ``v``, ``assign_add(d)`` adds ``d``."""
        if self._index() is not None or self._aggregation is not VariableAggregation.SUM:
            return DistributedVariable.update(self, fn, *args, constrain=constrain)
        # fold the copies into the first, then write there: any fn (assign, assign_add, an
        # optimizer's) sees the value a cross-replica read gives
        total = self._local_sum()
        self._components[0][...] = total
        for c in self._components[1:]:
            c[...] = 0
            bump_version(c)
        return self._update_each(fn, args, constrain, only=(0,))


def make_distributed(primary, devices, owner):
    """A Mirrored/SyncOnRead variable over ``primary`` (a Variable on ``devices[0]``, its
    buffer becomes component 0) with a copy of its value on each other device."""
    sync = primary.synchronization
    cls = SyncOnReadVariable if sync is VariableSynchronization.ON_READ else MirroredVariable
    a0 = backend_array(primary)
    d0 = device_of(primary)
    v = wrap(a0, d0, cls=cls)
    for slot in Variable.__slots__:
        try:
            object.__setattr__(v, slot, getattr(primary, slot))
        except AttributeError:
            pass
    v._devices = (d0,) + tuple(devices[1:])
    comps = [a0]
    for dev in devices[1:]:
        comps.append(_to(wrap(a0, d0), dev).copy())
    v._components = comps
    v._owner = owner
    v._override = None
    return v
