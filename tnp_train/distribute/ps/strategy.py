"""``ParameterServerStrategy`` (TF 2.4's ``tf.distribute.experimental.ParameterServerStrategy``).

On the chief: variables made in the strategy's scope are placed on the ``ps`` tasks, round-robin
in creation order (or split into a :class:`ShardedVariable` when ``variable_partitioner`` asks
for more than one shard along the first axis); an optimizer's slots are placed with their
variable. ``ClusterCoordinator(strategy)`` then runs functions on the workers. The strategy a
scheduled function captures becomes, on the worker, the worker's own ``ParameterServerStrategy``:
``strategy.run`` calls the function once there (one replica per worker, TF 2.4 on CPUs), and no
variable can be made there (TF makes them while tracing on the coordinator; build the model and
its metrics on the chief).
"""
from __future__ import annotations


from ..distribute_lib import Strategy, StrategyExtended

__all__ = ["ParameterServerStrategy", "ParameterServerStrategyExtended"]


def _cluster_roles(resolver):
    """``{"ps": [ranks], "worker": [ranks]}`` of a parameter-server cluster resolver."""
    from .server import _roles_from_spec
    ps, workers, _ = _roles_from_spec(resolver.cluster_spec())
    return {"ps": ps, "worker": workers}


class ParameterServerStrategyExtended(StrategyExtended):
    """The extended object of :class:`ParameterServerStrategy`: its variable creator places
    variables on the servers (on the chief) or refuses to make any (on a worker)."""

    def __init__(self, container_strategy, runtime=None, worker=None, partitioner=None,
                 num_ps=0, num_workers=0, cluster_resolver=None):
        super().__init__(container_strategy, communicator=None, device=None)
        self._runtime = runtime               # the chief's; None on a worker
        self._worker = worker                 # the worker's server; None on the chief
        self._variable_partitioner = partitioner
        self._num_ps = num_ps
        self._num_worker_tasks = num_workers
        self._cluster_resolver = cluster_resolver

    @property
    def runtime(self):
        """The chief's side of the job (placing variables, scheduling), None on a worker."""
        return self._runtime

    def __str__(self):
        where = "chief" if self._runtime is not None else f"worker:{self._worker.task_id}"
        return f"{where}, {self._num_ps} ps, {self._num_worker_tasks} workers"

    @property
    def _is_chief(self):
        return self._runtime is not None

    @property
    def should_checkpoint(self):
        """Whether this task writes checkpoints: the chief."""
        return self._runtime is not None

    @property
    def should_save_summary(self):
        return self._runtime is not None

    @property
    def parameter_devices(self):
        """The ``ps`` tasks' devices, TF's names."""
        return tuple(f"/job:ps/replica:0/task:{i}/device:CPU:0" for i in range(self._num_ps))

    @property
    def worker_devices(self):
        if self._worker is not None:
            return (f"/job:worker/replica:0/task:{self._worker.task_id}/device:CPU:0",)
        return ("/job:chief/replica:0/task:0/device:CPU:0",)

    def _num_shards(self, v0):
        p = self._variable_partitioner
        if p is None or v0.ndim == 0:
            return 1
        parts = p(tuple(v0.shape), v0.dtype)
        try:
            parts = [int(n) for n in parts]
        except TypeError:
            raise ValueError(f"ParameterServerStrategy: variable_partitioner must return a list "
                             f"of shard counts, one per dimension, got {parts!r}") from None
        if len(parts) != v0.ndim or not parts[0] >= 1 or any(n != 1 for n in parts[1:]):
            raise ValueError(f"ParameterServerStrategy: variable_partitioner must return a "
                             f"list/tuple whose elements are 1 besides the first element "
                             f"(non-zero), got {parts!r} for variable '{v0.name}' of shape "
                             f"{tuple(v0.shape)}")
        return parts[0]

    def _variable_creator(self, next_creator, **kwargs):
        if self._runtime is None:
            raise RuntimeError(
                f"ParameterServerStrategy: variable {kwargs.get('name')!r} was made on worker "
                f"{self._worker.task_id if self._worker else '?'} while running (or unpickling) "
                f"a scheduled function; variables are made on the chief, in strategy.scope() "
                f"(TF makes them while tracing the function there): build the model (give it "
                f"its input shape or call it once), its metrics and the optimizer's slots on the "
                f"chief, and do not make variables when a module is imported")
        from .variables import PSVariable
        v0 = next_creator(**kwargs)
        if isinstance(v0, PSVariable):
            return v0
        v = self._runtime.host(v0, self._num_shards(v0))
        self._record_created(v)
        return v

    def colocate_vars_with(self, colocate_with_variable):
        """Mirrors ``StrategyExtended.colocate_vars_with(var)``: variables made in the block
        live on ``var``'s parameter server (split as it is, when they have its shape)."""
        if self._runtime is None:
            return super().colocate_vars_with(colocate_with_variable)
        from .variables import PSVariable
        if not isinstance(colocate_with_variable, PSVariable):
            raise ValueError(f"colocate_vars_with: '{getattr(colocate_with_variable, 'name', '?')}'"
                             f" is not a variable of this ParameterServerStrategy")
        return self._runtime.colocate(colocate_with_variable)

    def variable_created_in_scope(self, v):
        from .variables import PSVariable
        if self._worker is not None:
            # on a worker, every variable of the job is one of its handles
            return isinstance(v, PSVariable) and v._ps.client is self._worker.client
        return super().variable_created_in_scope(v)


class ParameterServerStrategy(Strategy):
    """Mirrors ``tf.distribute.experimental.ParameterServerStrategy(cluster_resolver,
    variable_partitioner=None)``, made on the chief of an ``mpiexec`` job described by
    ``MPIClusterResolver(num_ps=...)`` (rank 0 the chief, then the ps tasks, then the workers,
    which run ``tt.distribute.Server(resolver).join()``), or by TF's resolvers
    (``TFConfigClusterResolver()``...) whose cluster is that MPI job in that order (ValueError
    naming both views otherwise). ``variable_partitioner``: a
    ``tt.distribute.experimental.partitioners`` object (or any callable ``(shape, dtype) ->
    shards per dimension``). ``num_replicas_in_sync`` is 1: workers train asynchronously. See
    ``docs/distributed.md``, "Parameter-server training"."""

    def __init__(self, cluster_resolver, variable_partitioner=None):
        if variable_partitioner is not None and not callable(variable_partitioner):
            raise TypeError(f"ParameterServerStrategy: variable_partitioner must be callable, "
                            f"got {type(variable_partitioner).__name__}")
        local = getattr(cluster_resolver, "_ps_local_cluster", None)
        if local is not None:
            runtime = local.runtime
        else:
            runtime = self._mpi_runtime(cluster_resolver)
        super().__init__(ParameterServerStrategyExtended(
            self, runtime=runtime, partitioner=variable_partitioner,
            num_ps=len(runtime.ps_ranks), num_workers=len(runtime.worker_ranks),
            cluster_resolver=cluster_resolver))
        self._cluster_coordinator = None

    @staticmethod
    def _mpi_runtime(resolver):
        from ..cluster_resolver import ClusterResolver
        if not isinstance(resolver, ClusterResolver):
            raise TypeError(f"ParameterServerStrategy: cluster_resolver must be a cluster "
                            f"resolver (MPIClusterResolver(num_ps=...)), got "
                            f"{type(resolver).__name__}")
        spec = resolver.cluster_spec().as_dict()
        if not spec.get("ps") or not spec.get("worker"):
            raise ValueError(f"ParameterServerStrategy: the cluster needs 'ps' and 'worker' "
                             f"tasks (got jobs {sorted(spec)}); launch under mpiexec with "
                             f"MPIClusterResolver(num_ps=1) or more, and at least "
                             f"num_ps + 2 ranks")
        if resolver.task_type != "chief":
            raise ValueError(f"ParameterServerStrategy is made on the chief; this task is "
                             f"{resolver.task_type}:{resolver.task_id}, which runs "
                             f"tt.distribute.Server(resolver).join()")
        from ..cluster_resolver.mpi_agreement import check_resolver_against_mpi
        from ..cluster_resolver.mpi_cluster_resolver import rank_and_size_from_env
        # TF_CONFIG's (or Slurm's...) job must be this MPI job, the chief its rank 0
        try:
            check_resolver_against_mpi("ParameterServerStrategy", resolver,
                                       *rank_and_size_from_env())
        except ValueError:
            from ..collective.mpi import abort_job_if_uncaught
            abort_job_if_uncaught()       # the other ranks may already wait for this one
            raise
        from .chief import chief_runtime
        return chief_runtime(_cluster_roles(resolver))

    @classmethod
    def _for_worker(cls, worker):
        """The strategy a scheduled function sees on ``worker`` (a ``WorkerServer``)."""
        self = cls.__new__(cls)
        ext = ParameterServerStrategyExtended(self, worker=worker,
                                              num_ps=len(worker.client.ps_ranks),
                                              num_workers=worker.num_workers)
        Strategy.__init__(self, ext)
        self._cluster_coordinator = None
        return self

    def __reduce__(self):
        from .pickling import _resolve_strategy
        return (_resolve_strategy, ())

    def __repr__(self):
        return f"<tt.distribute.experimental.ParameterServerStrategy {self._extended}>"
