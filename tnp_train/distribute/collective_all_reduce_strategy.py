"""``MultiWorkerMirroredStrategy`` (TF 2.4's ``collective_all_reduce_strategy``): synchronous
data-parallel training over the ranks of an MPI job, one replica per rank.

``mpiexec -n N python train.py`` starts N workers; without ``mpiexec`` the script is one worker
and behaves exactly as without a strategy. ``TF_CONFIG``, when set, must describe that same job
(``cluster_resolver.mpi_agreement``): no gRPC server is started, so a cluster of several tasks
outside an MPI job is an error, never a worker training alone. The communicator is the job's world
(``collective.get_world``; mpi4py is imported only then). Every variable made in the scope takes
worker 0's initial value (broadcast when it is made), so ranks seeded differently still start
from the same weights; ``synchronization``/``aggregation`` stay on the variable: ON_READ ones
(metric totals and counts, BatchNormalization's moving statistics) are combined across workers
when read in cross-replica context. Gradients are summed across workers by the optimizer's
``gradient_aggregator`` (:class:`~.gradient_reduction.AllReduceGradients`, bucketed and
overlapping the backward pass). Worker 0 is the chief: it writes checkpoints and summaries.
"""
from __future__ import annotations

import warnings

import tnp

from .collective_util import CommunicationImplementation, CommunicationOptions
from .distribute_lib import Strategy, StrategyExtended, in_local_only_block
from .gradient_reduction import AllReduceGradients, PerReplicaGradients

__all__ = ["MultiWorkerMirroredStrategy", "ExperimentalMultiWorkerMirroredStrategy"]


_WORKER_JOBS = ("chief", "worker")
_WHO = "MultiWorkerMirroredStrategy"


def _check_jobs(resolver):
    jobs = set(resolver.cluster_spec().as_dict())
    if jobs - {"chief", "worker", "evaluator"}:
        raise ValueError(f"{_WHO}: the cluster has jobs {sorted(jobs)}; this strategy runs only "
                         f"'chief' and 'worker' tasks (and an 'evaluator' beside them; "
                         f"parameter servers belong to ParameterServerStrategy)")


def _default_resolver():
    """TF's default, ``TFConfigClusterResolver()``, when ``TF_CONFIG`` names a cluster; else
    the MPI job's ranks (``MPIClusterResolver()``)."""
    from .cluster_resolver import MPIClusterResolver, TFConfigClusterResolver
    tf_config = TFConfigClusterResolver()
    return tf_config if tf_config.cluster_spec() else MPIClusterResolver()


class CollectiveAllReduceExtended(StrategyExtended):
    """The extended object of :class:`MultiWorkerMirroredStrategy`."""

    def __init__(self, container_strategy, cluster_resolver, communication_options,
                 communicator=None, devices=None):
        from .cluster_resolver import ClusterSpec, SimpleClusterResolver
        from .cluster_resolver.mpi_agreement import check_resolver_against_mpi
        from .cluster_resolver.mpi_cluster_resolver import (local_rank_from_env,
                                                            rank_and_size_from_env)
        from .collective import get_world
        from .collective.mpi import abort_job_if_uncaught
        given_options = communication_options
        if communication_options is None:
            communication_options = CommunicationOptions()
        if not isinstance(communication_options, CommunicationOptions):
            raise ValueError(f"MultiWorkerMirroredStrategy: communication_options must be a "
                             f"tt.distribute.experimental.CommunicationOptions, got "
                             f"{type(communication_options).__name__}")
        if communicator is not None:
            comm = communicator
            if given_options is not None:
                comm.set_options(given_options)
            if cluster_resolver is None:
                cluster_resolver = SimpleClusterResolver(
                    ClusterSpec({"worker": [f"rank-{i}" for i in range(comm.size)]}),
                    task_type="worker", task_id=comm.rank)
        else:
            if cluster_resolver is None:
                cluster_resolver = _default_resolver()
            _check_jobs(cluster_resolver)
            # before MPI starts: a job launched wrongly fails at once, on every process (a
            # rank that alone disagrees aborts the job if its error goes uncaught)
            try:
                check_resolver_against_mpi(_WHO, cluster_resolver, *rank_and_size_from_env(),
                                           jobs=_WORKER_JOBS)
            except ValueError:
                abort_job_if_uncaught()
                raise
            comm = get_world(communication_options)
        check_resolver_against_mpi(_WHO, cluster_resolver, comm.rank, comm.size,
                                   jobs=_WORKER_JOBS)
        device = None
        default = tnp.get_default_device()
        gpus_wanted = int((cluster_resolver.num_accelerators() or {}).get("GPU", 0) or 0)
        if devices is None and gpus_wanted > 1:
            # TF's rule: a worker whose resolver names several GPUs runs a replica on each
            gpus = [d for d in tnp.__array_namespace_info__().devices() if d.kind == "gpu"]
            if len(gpus) < gpus_wanted:
                raise ValueError(f"MultiWorkerMirroredStrategy: the cluster resolver asks for "
                                 f"{gpus_wanted} GPUs per worker; this process sees "
                                 f"{len(gpus)}")
            devices = gpus[:gpus_wanted]
        if devices is not None and len(devices) > 1:
            from .one_device_strategy import parse_device
            devices = [parse_device(d, "MultiWorkerMirroredStrategy") for d in devices]
        elif default.is_gpu:
            # one rank per GPU of its host
            gpus = [d for d in tnp.__array_namespace_info__().devices() if d.kind == "gpu"]
            local = getattr(cluster_resolver, "local_rank", None)
            if local is None:
                local = local_rank_from_env()
            if gpus and local is not None:
                device = gpus[local % len(gpus)]
        super().__init__(container_strategy, communicator=comm, device=device,
                         devices=devices if devices is not None and len(devices) > 1 else None)
        self._cluster_resolver = cluster_resolver
        self._communication_options = communication_options

    # ------------------------------------------------------------------ variables
    def _variable_creator(self, next_creator, **kwargs):
        if self._num_local > 1:
            from .mirrored_strategy import mirror_variable

            def from_worker_0(primary):
                if self._num_workers > 1 and not in_local_only_block():
                    # over the workers only: one replica thread of each makes the variable
                    primary.update(self._broadcast_from_worker_0, constrain=False)
            v = mirror_variable(self, next_creator, kwargs, before_mirror=from_worker_0)
            self._record_created(v)
            return v
        init = kwargs.get("initial_value")
        if callable(init) and not isinstance(init, tnp.ndarray):
            kwargs["initial_value"] = init()
        if self._device is not None and kwargs.get("device") is None:
            kwargs["device"] = self._device
        v = next_creator(**kwargs)
        if self._num_workers > 1 and not in_local_only_block():
            # worker 0's initial value everywhere: ranks seeded differently start together
            v.update(self._broadcast_from_worker_0, constrain=False)
        self._record_created(v)
        return v

    def _broadcast_from_worker_0(self, a):
        self._broadcast_arrays([a], root=0, comm=self._worker_comm)

    # ------------------------------------------------------------------ gradients
    def _replica_aggregator_maker(self):
        n = self._num_replicas_in_sync
        pack = self._communication_options.bytes_per_pack or None
        compression = self._communication_options.compression.wire_dtype
        return lambda comm: AllReduceGradients(comm, n, bucket_bytes=pack,
                                               compression=compression)

    def _new_gradient_aggregator(self):
        """Sums an optimizer's gradients over the workers (each replica thread its own, with
        several local replicas)."""
        make = self._replica_aggregator_maker()
        if self._num_local > 1:
            return PerReplicaGradients(self, make)
        return make(self._comm)

    @property
    def _elastic(self):        # the name before the public one
        return self.elastic

    def rebind_workers(self, comm):
        """Go on over ``comm`` (the survivors of a lost worker, see ``elastic``): this
        worker's index, the replica counts, the gradient aggregators and the job's world follow
        it; worker 0 of ``comm`` is the chief."""
        from .cluster_resolver import ClusterSpec, SimpleClusterResolver
        from .collective import replace_world
        old = self._worker_comm
        self._worker_comm = comm
        self._num_workers = int(comm.size)
        self._worker_index = int(comm.rank)
        self._num_replicas_in_sync = self._num_workers * self._num_local
        self._replica_id_base = self._worker_index * self._num_local
        with self._replica_lock:
            self._replica_comms = None
        for optimizer, agg in list(self._aggregators.values()):
            if isinstance(agg, PerReplicaGradients):
                agg.remake(self._replica_aggregator_maker())
            else:
                agg.rebind(comm, self._num_replicas_in_sync)
        self._cluster_resolver = SimpleClusterResolver(
            ClusterSpec({"worker": [f"rank-{i}" for i in range(self._num_workers)]}),
            task_type="worker", task_id=self._worker_index)
        from .collective import world as _world
        if _world._world is old:
            replace_world(comm)

    @property
    def _in_multi_worker_mode(self):
        return self._num_workers > 1


class MultiWorkerMirroredStrategy(Strategy):
    """Mirrors ``tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=None,
    communication_options=None)``: one replica per MPI rank. ``cluster_resolver`` defaults to
    TF's ``TFConfigClusterResolver()`` when ``TF_CONFIG`` names a cluster, else to
    ``MPIClusterResolver()`` (every rank a worker, worker 0 the chief). A resolver must describe
    the MPI job: as many ``chief`` and ``worker`` tasks as ranks, and this process's task
    number ``rank`` (the chief first, as TF numbers them); otherwise (in particular for a
    cluster of several tasks in a process not launched by ``mpiexec``/``srun``) a ValueError
    names both views, before MPI starts. A resolver that names no task takes the rank's.
    ``communication_options`` (``CommunicationOptions``): ``bytes_per_pack`` sizes the gradient
    buckets, ``timeout_seconds`` bounds every collective (default 60 s, never unbounded),
    ``compression`` (beyond TF: ``Compression.fp16`` / ``.bf16``) sends the gradients as
    float16 / bfloat16."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        super().__init__(CollectiveAllReduceExtended(self, cluster_resolver,
                                                     communication_options))

    @classmethod
    def _from_communicator(cls, communicator, communication_options=None, devices=None):
        """A strategy over ``communicator`` instead of the MPI world (a member of a
        ``collective.ThreadGroup``: several workers in one process, for tests), each worker
        running a replica on every one of ``devices`` (default: one replica)."""
        self = cls.__new__(cls)
        Strategy.__init__(self, CollectiveAllReduceExtended(
            self, None, communication_options, communicator=communicator, devices=devices))
        return self

    def __repr__(self):
        ext = self._extended
        return (f"<tt.distribute.MultiWorkerMirroredStrategy worker {ext.worker_index} of "
                f"{ext.num_workers}>")


class ExperimentalMultiWorkerMirroredStrategy(MultiWorkerMirroredStrategy):
    """Mirrors TF 2.4's deprecated ``tf.distribute.experimental.MultiWorkerMirroredStrategy(
    communication=CollectiveCommunication.AUTO, cluster_resolver=None)``."""

    def __init__(self, communication=CommunicationImplementation.AUTO, cluster_resolver=None):
        warnings.warn("tt.distribute.experimental.MultiWorkerMirroredStrategy is deprecated: use "
                      "tt.distribute.MultiWorkerMirroredStrategy", DeprecationWarning,
                      stacklevel=2)
        super().__init__(cluster_resolver=cluster_resolver,
                         communication_options=CommunicationOptions(
                             implementation=communication))
