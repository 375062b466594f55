"""Per-replica values (``tf.distribute.DistributedValues``, ``PerReplica``, ``Mirrored``) and the
helpers a strategy needs to build and take them apart.

``strategy.run(fn)`` calls ``fn`` once per local replica and *regroups* the results: a nest of
per-replica results becomes one nest whose leaves are :class:`PerReplica` values
(:func:`regroup`); before the calls, a nest of arguments is *specialised* for each replica
(:func:`select_replica`). With one local replica (MultiWorkerMirroredStrategy runs one per
process) nothing is wrapped: results come back as they are, as in TF.
"""
from __future__ import annotations

from collections import abc

from ..utils import tree as _tree

__all__ = ["DistributedValues", "PerReplica", "Mirrored", "regroup", "select_replica",
           "select_replica_mirrored", "assert_mirrored", "is_mirrored", "local_results",
           "experimental_local_results", "map_structure", "flatten"]


class DistributedValues:
    """Mirrors ``tf.distribute.DistributedValues``: one value per local replica (``.values``,
    replica ``i``'s at index ``i``). Build one through a strategy, not directly."""

    __slots__ = ("_values",)

    def __init__(self, values):
        values = tuple(values)
        if not values:
            raise ValueError(f"{type(self).__name__}: needs one value per replica, got none")
        self._values = values

    @property
    def values(self):
        """The per-replica values, a tuple (``strategy.experimental_local_results`` returns it)."""
        return self._values

    @property
    def _primary(self):
        """Replica 0's value (TF reads a mirrored value there in cross-replica context)."""
        return self._values[0]

    @property
    def _devices(self):
        return tuple(getattr(v, "device", None) for v in self._values)

    def __str__(self):
        items = ",\n".join(f"  {i}: {v}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{items}\n}}"

    def __repr__(self):
        items = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{items}\n}}"


class PerReplica(DistributedValues):
    """Mirrors ``tf.distribute.PerReplica`` (internal in TF): values that may differ per replica,
    such as what ``strategy.run`` returns; combine them with ``strategy.reduce``/``gather``."""

    __slots__ = ()


class Mirrored(DistributedValues):
    """Mirrors TF's ``Mirrored``: values equal on every replica (each on its replica's device),
    such as the result of a cross-replica all-reduce."""

    __slots__ = ()


def is_mirrored(value):
    """Whether ``value`` is a :class:`Mirrored` value."""
    return isinstance(value, Mirrored)


# ----------------------------------------------------------------------------- nests
# A nest is what tf.nest walks (tnp_train.utils.tree): a DistributedValues is one leaf, and
# mappings are visited by sorted key, the same order on every rank. This module exports the two.
map_structure = _tree.map_structure
flatten = _tree.flatten


def _kind(x):
    if isinstance(x, list):
        return "a list"
    if isinstance(x, tuple):
        return f"a {type(x).__name__}" if hasattr(x, "_fields") else "a tuple"
    if isinstance(x, abc.Mapping):
        return "a dict"
    return f"a {type(x).__name__}"


def _keys(d):
    try:
        return sorted(d)
    except TypeError:  # keys of unorderable mixed types
        return list(d)


def regroup(values, wrap_class=PerReplica, always_wrap=False, where="strategy.run"):
    """One nest from a sequence of per-replica nests (TF's ``distribute_utils.regroup``): the
    nests must match (ValueError naming the replicas and structures otherwise); each leaf
    position becomes ``wrap_class(leaves)``, or the leaf itself when every replica returned the
    very same object (unless ``always_wrap``), as TF does; one replica returns its value as is."""
    values = tuple(values)
    if not values:
        raise ValueError(f"{where}: no per-replica values to regroup")
    if len(values) == 1 and not always_wrap:
        return values[0]
    return _regroup(values, wrap_class, always_wrap, where, "")


def _regroup(values, wrap_class, always_wrap, where, path):
    v0 = values[0]
    if isinstance(v0, (list, tuple)) and not isinstance(v0, DistributedValues):
        for i, v in enumerate(values[1:], 1):
            if type(v) is not type(v0) or len(v) != len(v0):
                raise ValueError(
                    f"{where}: replica {i} returned {_kind(v)} of length "
                    f"{len(v) if isinstance(v, (list, tuple)) else '-'} at {path or 'the top'} "
                    f"where replica 0 returned {_kind(v0)} of length {len(v0)}; every replica "
                    "must return the same structure")
        items = [_regroup(tuple(v[j] for v in values), wrap_class, always_wrap, where,
                          f"{path}[{j}]") for j in range(len(v0))]
        if isinstance(v0, list):
            return items
        return type(v0)(*items) if hasattr(v0, "_fields") else tuple(items)
    if isinstance(v0, abc.Mapping):
        keys = set(v0.keys())
        for i, v in enumerate(values[1:], 1):
            if not isinstance(v, abc.Mapping) or set(v.keys()) != keys:
                got = f"a dict with keys {_keys(v)}" if isinstance(v, abc.Mapping) else _kind(v)
                raise ValueError(
                    f"{where}: replica {i} returned {got} at {path or 'the top'} where replica 0 "
                    f"returned a dict with keys {_keys(v0)}; every replica must return the "
                    "same structure")
        return type(v0)((k, _regroup(tuple(v[k] for v in values), wrap_class, always_wrap,
                                     where, f"{path}[{k!r}]")) for k in v0.keys())
    if not always_wrap and all(v is v0 for v in values[1:]):
        return v0
    return wrap_class(values)


def select_replica(replica_id, structured):
    """``structured`` specialised for local replica ``replica_id`` (TF's
    ``distribute_utils.select_replica``): every DistributedValues leaf is replaced by its
    ``replica_id``-th value; other leaves are shared by all replicas."""
    def pick(x):
        if isinstance(x, DistributedValues):
            if not 0 <= replica_id < len(x._values):
                raise ValueError(f"select_replica: replica {replica_id} does not exist in a "
                                 f"{type(x).__name__} of {len(x._values)} values")
            return x._values[replica_id]
        return x
    return _tree.map_structure(pick, structured)


def assert_mirrored(structured):
    """TypeError if a DistributedValues leaf of ``structured`` is not :class:`Mirrored`."""
    for leaf in _tree.flatten(structured):
        if isinstance(leaf, DistributedValues) and not isinstance(leaf, Mirrored):
            raise TypeError(f"Expected a value mirrored across replicas, got a "
                            f"{type(leaf).__name__}: {leaf}")


def select_replica_mirrored(replica_id, structured):
    """:func:`select_replica` for a nest whose distributed leaves must all be Mirrored (the
    arguments of an update)."""
    assert_mirrored(structured)
    return select_replica(replica_id, structured)


def local_results(value, num_replicas=None):
    """``strategy.experimental_local_results(value)``: a tuple with one entry per local replica.

    A DistributedValues gives its values; a nest containing DistributedValues gives one nest per
    replica (each distributed leaf replaced by that replica's value, as newer TF does; TF 2.4
    returned ``(nest,)``); any other value gives ``(value,)``, or ``num_replicas`` copies of it
    when the caller says how many local replicas there are.
    """
    if isinstance(value, DistributedValues):
        return value._values
    if _tree.is_nested(value):
        counts = {len(leaf._values) for leaf in _tree.flatten(value)
                  if isinstance(leaf, DistributedValues)}
        if len(counts) > 1:
            raise ValueError("experimental_local_results: the distributed values in the nest "
                             f"have different numbers of replicas: {sorted(counts)}")
        if counts:
            n = next(iter(counts))
            if num_replicas is not None and n != num_replicas:
                raise ValueError(f"experimental_local_results: the nest holds values of {n} "
                                 f"replicas where the strategy has {num_replicas} local replicas")
        elif num_replicas is None:
            return (value,)
        else:
            n = num_replicas
        return tuple(select_replica(i, value) for i in range(n))
    return (value,) * (num_replicas or 1)


experimental_local_results = local_results
