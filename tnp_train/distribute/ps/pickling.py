"""Pickling between the ranks of one parameter-server job (cloudpickle, protocol 5: the arrays
an object holds travel as out-of-band raw buffers).

``ClosurePickler`` (:func:`closure_pickler`) is what ``ClusterCoordinator.schedule`` and the workers' results use:

* a :class:`PSVariable` becomes its handle (the worker's own object for that variable);
* a ``tt.Variable`` that is not on a server is refused: a worker would update a private copy,
  and the chief would never see it;
* the ``ParameterServerStrategy`` becomes the worker's strategy; a per-worker value (an
  iterator of ``create_per_worker_dataset``) becomes a reference to the worker's own;
* a ``RemoteValue`` among the arguments is fetched and passed as its value;
* locks, thread-locals and the like (an optimizer's or a metrics container's build lock)
  become new ones.

The ids of the optimizers and of the trainable server variables met are kept (``optimizers``,
``trainable``), so the coordinator can make an optimizer's slots on the chief before a worker
would need them.
"""
from __future__ import annotations

import io
import pickle
import threading

from ...autodiff import Variable

__all__ = ["closure_pickler", "dumps", "dumps_plain", "loads"]

_LOCK_TYPES = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}


def _new_lock(kind):
    return kind()


def _new_local():
    return threading.local()


def _new_event():
    return threading.Event()


def _new_condition():
    return threading.Condition()


def _resolve_handle(state):
    from .variables import current_client
    return current_client().resolve(state)


def _resolve_strategy():
    from .variables import current_client
    return current_client().worker_strategy()


def _resolve_per_worker(kind, payload):
    from .variables import current_client
    return current_client().per_worker(kind, payload)


def _cloudpickle():
    try:
        import cloudpickle
    except ImportError as e:
        raise ImportError("parameter-server training sends functions to the workers with "
                          "cloudpickle: pip install cloudpickle (the [mpi] extra)") from e
    return cloudpickle


_pickler_class = []


def closure_pickler(file, buffer_callback=None, where="ClusterCoordinator.schedule"):
    """A :class:`ClosurePickler` (the class is made on first use: cloudpickle is imported
    then)."""
    if not _pickler_class:
        methods = {k: v for k, v in vars(_ClosurePicklerMethods).items()
                   if k not in ("__dict__", "__weakref__")}
        _pickler_class.append(type("ClosurePickler", (_cloudpickle().Pickler,), methods))
    return _pickler_class[0](file, buffer_callback, where)


class _ClosurePicklerMethods:
    """The methods of ``ClosurePickler`` (a ``cloudpickle.Pickler``; see the module
    docstring). ``where`` names the caller in errors."""

    def __init__(self, file, buffer_callback=None, where="ClusterCoordinator.schedule"):
        super(_pickler_class[0], self).__init__(file, protocol=5,
                                                buffer_callback=buffer_callback)
        self.where = where
        self.optimizers = {}       # id -> optimizer
        self.trainable = {}        # id -> trainable PSVariable
        self.resources = set()     # per-worker resource ids referred to

    def reducer_override(self, obj):
        t = type(obj)
        kind = _LOCK_TYPES.get(t)
        if kind is not None:
            return (_new_lock, (kind,))
        if t is threading.local:
            return (_new_local, ())
        if t is threading.Event:
            return (_new_event, ())
        if t is threading.Condition:
            return (_new_condition, ())
        if isinstance(obj, Variable):
            from .variables import PSVariable, VariableClient
            if isinstance(obj, PSVariable):
                if obj.trainable:
                    self.trainable[id(obj)] = obj
                return (_resolve_handle, (VariableClient.state_of(obj),))
            raise ValueError(
                f"{self.where}: the function or its arguments refer to variable '{obj.name}' "
                f"(shape {tuple(obj.shape)}, {obj.dtype.name}), which was not created in the "
                f"ParameterServerStrategy's scope: a worker would update a copy of its own and "
                f"the chief would never see it. Create it under `with strategy.scope():`")
        from .strategy import ParameterServerStrategy
        if isinstance(obj, ParameterServerStrategy):
            return (_resolve_strategy, ())
        from . import coordinator as _co
        if isinstance(obj, _co.PerWorkerValues):
            ref = obj._wire_ref()
            if ref[0] == "resource":
                self.resources.add(ref[1])
            return (_resolve_per_worker, ref)
        if isinstance(obj, _co.RemoteValue):
            return (_identity, (obj.fetch(),))
        if isinstance(obj, _co.ClusterCoordinator):
            raise ValueError(f"{self.where}: a scheduled function cannot use the "
                             f"ClusterCoordinator (it runs on a worker); schedule from the chief")
        from ...optimizers.base_optimizer import Optimizer
        if isinstance(obj, Optimizer):
            self.optimizers[id(obj)] = obj
        return super(_pickler_class[0], self).reducer_override(obj)


def _identity(x):
    return x


class PickleInfo:
    """What :func:`dumps` met while pickling: optimizers, trainable server variables, per-worker
    resources (the pickler itself, whose memo holds every object pickled, is not kept)."""

    __slots__ = ("optimizers", "trainable", "resources")

    def __init__(self, p):
        self.optimizers, self.trainable, self.resources = p.optimizers, p.trainable, p.resources


def dumps(obj, where="ClusterCoordinator.schedule"):
    """``(stream, out-of-band buffers, PickleInfo)`` of ``obj`` through ``ClosurePickler``."""
    buffers = []
    f = io.BytesIO()
    p = closure_pickler(f, buffer_callback=buffers.append, where=where)
    try:
        p.dump(obj)
    except ValueError:
        raise
    except Exception as e:
        raise TypeError(f"{where}: cannot serialize {_what(obj)} for the workers: "
                        f"{type(e).__name__}: {e}") from e
    return f.getvalue(), buffers, PickleInfo(p)


def _what(obj):
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"{name!r}"


def dumps_plain(obj):
    """A small object (an update's kernel, a scalar argument) as one pickle stream."""
    return _cloudpickle().dumps(obj, protocol=5)


def loads(stream, buffers=()):
    return pickle.loads(stream, buffers=buffers)
