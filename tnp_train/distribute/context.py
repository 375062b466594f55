"""Which strategy is current, and in which context (TF 2.4's
``distribution_strategy_context``), kept per thread as TF keeps it per graph:

* no strategy: the *default strategy* in its *default replica context*
  (``get_replica_context()`` is a replica context of one replica, ``in_cross_replica_context()``
  is False, ``has_strategy()`` is False);
* inside ``strategy.scope()``: the *cross-replica context* of ``strategy``
  (``get_replica_context()`` is None) with the strategy's variable creator active, so every
  ``tt.Variable`` made there is the strategy's kind;
* inside ``strategy.run(fn)`` (or ``merge_call``'s way back): a replica context of
  ``strategy`` whose ``replica_id_in_sync_group`` says which replica runs.

Also here: blocks that only some ranks run (:func:`local_only`). ``distribute_lib`` re-exports
every name.
"""
from __future__ import annotations

import threading
import weakref

__all__ = ["get_strategy", "has_strategy", "get_strategy_if_any", "in_cross_replica_context",
           "get_replica_context", "replica_batch_rows", "get_cross_replica_context",
           "experimental_set_strategy", "local_only", "in_local_only_block"]

_local = threading.local()


class _Context:
    __slots__ = ("strategy", "replica_context")

    def __init__(self, strategy, replica_context):
        self.strategy = strategy
        self.replica_context = replica_context     # None: cross-replica context


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _current():
    s = _stack()
    return s[-1] if s else _default_context()


def get_strategy():
    """Mirrors ``tf.distribute.get_strategy()``: the current strategy (the default strategy
    outside every scope)."""
    return _current().strategy


def has_strategy():
    """Mirrors ``tf.distribute.has_strategy()``: whether a non-default strategy is current."""
    return _current().strategy is not _get_default_strategy()


def get_strategy_if_any():
    """The current non-default strategy, or None: ``has_strategy()`` for code that runs on every
    call (a loss's reduction check) and needs the strategy only when there is one."""
    s = getattr(_local, "stack", None)
    if not s:
        return None
    strategy = s[-1].strategy
    return None if strategy is _get_default_strategy() else strategy


def in_cross_replica_context():
    """Mirrors ``tf.distribute.in_cross_replica_context()``: True inside a strategy's scope and
    outside its replica functions (False without a strategy, as in TF)."""
    return _current().replica_context is None


def get_replica_context():
    """Mirrors ``tf.distribute.get_replica_context()``: the current ``ReplicaContext``; the
    default one without a strategy, None in a cross-replica context."""
    return _current().replica_context


def replica_batch_rows(size=None):
    """``(n, lo, hi)`` when the current replica's batch is rows ``[lo, hi)`` of a global batch
    of ``n`` rows the strategy split (and, when ``size`` is given, it has ``size`` rows); else
    None (outside a replica function, or on data the strategy did not split)."""
    ctx = _current().replica_context
    rows = getattr(ctx, "_batch_rows", None)
    if rows is None or (size is not None and rows[2] - rows[1] != int(size)):
        return None
    return rows


def get_cross_replica_context():
    """The current strategy in a cross-replica context, else None (TF's
    ``distribution_strategy_context.get_cross_replica_context``)."""
    ctx = _current()
    return ctx.strategy if ctx.replica_context is None else None


def experimental_set_strategy(strategy):
    """Mirrors ``tf.distribute.experimental_set_strategy(strategy)``: make ``strategy`` current
    on this thread without a ``with`` block (its scope stays entered until the next call; None
    leaves it). RuntimeError inside another strategy's scope."""
    old = getattr(_local, "global_scope", None)
    if old is not None:
        _local.global_scope = None
        old.__exit__(None, None, None)
    if has_strategy():
        raise RuntimeError("experimental_set_strategy: must not be called inside a "
                           "tt.distribute.Strategy scope")
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _local.global_scope = scope


def _require_cross_replica_or_default(strategy, what):
    ctx = _current()
    if ctx.replica_context is None:
        if ctx.strategy is not strategy and ctx.strategy is not _get_default_strategy():
            raise RuntimeError(f"{what}: called in the cross-replica context of another "
                               f"strategy ({type(ctx.strategy).__name__}); enter this "
                               f"strategy's scope instead")
        return
    if ctx.strategy is _get_default_strategy() and ctx.replica_context is _default_replica_ctx():
        return
    raise RuntimeError(f"{what}: method requires being in cross-replica context, use "
                       f"get_replica_context().merge_call()")


# ---------------------------------------------------------------- blocks run by some ranks only
def local_only():
    """A block that only some ranks run (the chief's checkpoint and summary writes): variables
    made in it are not broadcast from worker 0 (a broadcast that the other ranks never join
    would stall the job). Nothing else changes."""
    return _LocalOnly()


class _LocalOnly:
    __slots__ = ()

    def __enter__(self):
        _local.local_only = getattr(_local, "local_only", 0) + 1
        return self

    def __exit__(self, *exc):
        _local.local_only -= 1
        return False


def in_local_only_block():
    """Whether this thread runs inside :func:`local_only`."""
    return getattr(_local, "local_only", 0) > 0


# ---------------------------------------------------------------- the strategies there are
_live = weakref.WeakSet()
_live_lock = threading.Lock()


def _register_strategy(strategy):
    with _live_lock:
        _live.add(strategy)


def live_strategies():
    """The non-default strategies that exist (to find the one a model's variables were made
    in)."""
    with _live_lock:
        return list(_live)


# ---------------------------------------------------------------- the default strategy
_default = {}
_default_lock = threading.Lock()


def _get_default_strategy():
    s = _default.get("strategy")
    if s is None:
        with _default_lock:
            s = _default.get("strategy")
            if s is None:
                # the default strategy is made of the classes of distribute_lib, which sits
                # above this module: made on the first call only
                from .distribute_lib import ReplicaContext, _DefaultDistributionStrategy
                s = _DefaultDistributionStrategy()
                _default["replica_ctx"] = ReplicaContext(s, 0)
                _default["context"] = _Context(s, _default["replica_ctx"])
                _default["strategy"] = s
    return s


def _default_replica_ctx():
    _get_default_strategy()
    return _default["replica_ctx"]


def _default_context():
    _get_default_strategy()
    return _default["context"]
