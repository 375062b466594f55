"""``ClusterResolver``, ``SimpleClusterResolver`` and ``UnionResolver``
(``tf.distribute.cluster_resolver``): where a job's tasks are and which one this process is."""
from __future__ import annotations

import abc
import collections

from .cluster_spec import ClusterSpec

__all__ = ["ClusterResolver", "SimpleClusterResolver", "UnionResolver", "UnionClusterResolver",
           "format_master_url", "local_accelerators"]


def format_master_url(master, rpc_layer=None):
    """``"rpc_layer://master"``, or ``master`` alone without an rpc layer (TF's helper)."""
    return f"{rpc_layer}://{master}" if rpc_layer else master


def local_accelerators():
    """The accelerators this process sees, as TF counts them: ``{"GPU": n}``, or ``{}``."""
    import tnp
    gpus = sum(1 for d in tnp.__array_namespace_info__().devices() if d.kind == "gpu")
    return {"GPU": gpus} if gpus else {}


class ClusterResolver(abc.ABC):
    """Mirrors ``tf.distribute.cluster_resolver.ClusterResolver``: subclasses give
    ``cluster_spec()`` and ``master()``; ``task_type``/``task_id``/``rpc_layer`` are read from
    ``self._task_type``/``_task_id``/``_rpc_layer`` unless a subclass computes them."""

    @abc.abstractmethod
    def cluster_spec(self):
        """The cluster as a ``tt.train.ClusterSpec``, as it is now."""

    @abc.abstractmethod
    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The address of the session master (only meaningful in TF 1.x)."""

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """``{device type: count}`` of the accelerators per worker. Differs from TF: counted in
        this process (tasks are assumed alike); ``config_proto`` is ignored."""
        del task_type, task_id, config_proto
        return collections.defaultdict(int, local_accelerators())

    @property
    def environment(self):
        """``"google"`` inside Google, ``""`` elsewhere (always ``""`` here)."""
        return ""

    @property
    def task_type(self):
        """This task's job name (``"worker"``, ``"chief"``, ``"ps"``, ``"evaluator"``) or None."""
        return getattr(self, "_task_type", None)

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        """This task's index in its job, or None."""
        return getattr(self, "_task_id", None)

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def rpc_layer(self):
        """The protocol between tasks (TF: ``"grpc"``; MPI carries everything here)."""
        return getattr(self, "_rpc_layer", None)

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer


class SimpleClusterResolver(ClusterResolver):
    """Mirrors ``tf.distribute.cluster_resolver.SimpleClusterResolver(cluster_spec, master='',
    task_type=None, task_id=None, environment='', num_accelerators=None, rpc_layer=None)``:
    returns what it was given."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("SimpleClusterResolver: cluster_spec must be a tt.train.ClusterSpec, "
                            f"got {type(cluster_spec).__name__}")
        if not isinstance(master, str):
            raise TypeError(f"SimpleClusterResolver: master must be a string, got {master!r}")
        self._cluster_spec = cluster_spec
        self._master = master
        self._task_type = task_type
        self._task_id = task_id
        self._environment = environment
        self._num_accelerators = num_accelerators
        self._rpc_layer = rpc_layer

    def cluster_spec(self):
        """The ClusterSpec given to the constructor."""
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The given task's address when ``task_type`` and ``task_id`` are given, else the
        ``master`` given to the constructor; prefixed with the rpc layer."""
        if task_type is not None and task_id is not None:
            master = self.cluster_spec().task_address(task_type, task_id)
        else:
            master = self._master
        return format_master_url(master, rpc_layer or self._rpc_layer)

    @property
    def environment(self):
        return self._environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """The ``num_accelerators`` given to the constructor (``{}`` for None); no detection."""
        del task_type, task_id, config_proto
        return {} if self._num_accelerators is None else self._num_accelerators


class UnionClusterResolver(ClusterResolver):
    """Mirrors ``tf.distribute.cluster_resolver.UnionResolver(*resolvers, rpc_layer=None,
    task_type=None, task_id=None)``: the union of the resolvers' cluster specs; everything else
    from the first resolver unless overridden. Differs from TF: an override ``task_id=0`` is
    honoured (TF's ``or`` drops it), and ``master(task_type, task_id)`` uses the ``rpc_layer``
    the union reports (TF's uses only an override given to the union)."""

    def __init__(self, *args, **kwargs):
        self._rpc_layer = kwargs.pop("rpc_layer", None)
        self._task_type = kwargs.pop("task_type", None)
        self._task_id = kwargs.pop("task_id", None)
        if kwargs:
            raise ValueError(f"UnionResolver: unexpected keyword arguments {sorted(kwargs)!r}")
        if not args:
            raise ValueError("UnionResolver: at least one ClusterResolver is required")
        for r in args:
            if not isinstance(r, ClusterResolver):
                raise TypeError("UnionResolver: every argument must be a ClusterResolver, got "
                                f"{type(r).__name__}")
        self._cluster_resolvers = args

    def cluster_spec(self):
        """The merged ClusterSpec: a job's task lists are concatenated (in resolver order) when
        every resolver gives it as a list; if any gives a dict, the tasks are merged by index
        and a task index given twice raises KeyError (TF's rule)."""
        specs = [r.cluster_spec().as_dict() for r in self._cluster_resolvers]
        merged = {}
        for spec in specs:
            for job, tasks in spec.items():
                if job not in merged or isinstance(tasks, dict):
                    merged[job] = [] if (job not in merged and isinstance(tasks, list)) else {}
        for spec in specs:
            for job, tasks in spec.items():
                if isinstance(merged[job], list):
                    merged[job].extend(tasks)
                    continue
                task_dict = dict(enumerate(tasks)) if isinstance(tasks, list) else dict(tasks)
                dup = set(task_dict) & set(merged[job])
                if dup:
                    raise KeyError("UnionResolver: duplicate task indices when merging the "
                                   f"cluster specs of job {job!r}: {sorted(dup)!r}")
                merged[job].update(task_dict)
        return ClusterSpec(merged)

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The given task's address when ``task_type`` and ``task_id`` are given, else the
        first resolver's master."""
        if task_type is not None and task_id is not None:
            master = self.cluster_spec().task_address(task_type, task_id)
            return format_master_url(master, rpc_layer or self.rpc_layer)
        return self._cluster_resolvers[0].master(rpc_layer=rpc_layer)

    @property
    def task_type(self):
        t = self._task_type
        return t if t is not None else self._cluster_resolvers[0].task_type

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        t = self._task_id
        return t if t is not None else self._cluster_resolvers[0].task_id

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def environment(self):
        return self._cluster_resolvers[0].environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return self._cluster_resolvers[0].num_accelerators(task_type, task_id, config_proto)

    @property
    def rpc_layer(self):
        return self._rpc_layer or self._cluster_resolvers[0].rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer


UnionResolver = UnionClusterResolver
