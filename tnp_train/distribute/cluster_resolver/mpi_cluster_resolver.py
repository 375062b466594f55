"""``MPIClusterResolver``: the roles of the ranks of an ``mpiexec`` job.

The rank and the job size come from the variables the MPI launcher sets for every process
(Open MPI's ``OMPI_COMM_WORLD_RANK``/``_SIZE``, Hydra's ``PMI_RANK``/``PMI_SIZE`` for MPICH and
Intel MPI, MVAPICH2's ``MV2_COMM_WORLD_*``, or ``PMIX_RANK`` with the size from one of those or
from Slurm), so resolving the cluster never imports mpi4py nor starts MPI: that happens only when
a strategy needs a communicator. Without a launcher the process is a job of one worker.
"""
from __future__ import annotations

import numbers
import os

from .cluster_resolver import ClusterResolver, format_master_url, local_accelerators
from .cluster_spec import ClusterSpec

__all__ = ["MPIClusterResolver", "rank_and_size_from_env", "local_rank_from_env"]

# (rank variable, size variable), the first one set wins
_LAUNCHER_VARS = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),   # Open MPI (mpiexec / prterun)
    ("PMI_RANK", "PMI_SIZE"),                           # Hydra: MPICH, Intel MPI
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),     # MVAPICH2
    ("PMIX_RANK", None),                                # any PMIx launcher
)
# where a PMIx launcher that sets no size variable of its own leaves the size
_SIZE_FALLBACKS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "PMIX_LOCAL_RANK", "SLURM_LOCALID")


def _env_int(environ, name, minimum):
    raw = environ[name]
    try:
        value = int(raw)
    except ValueError:
        raise RuntimeError(f"MPIClusterResolver: the launcher's variable {name}={raw!r} is not "
                           "an integer") from None
    if value < minimum:
        raise RuntimeError(f"MPIClusterResolver: the launcher's variable {name}={raw!r} must be "
                           f">= {minimum}")
    return value


def rank_and_size_from_env(environ=None):
    """``(rank, size)`` of this process in the MPI job that launched it, read from the
    launcher's environment variables; ``(0, 1)`` when no launcher started it."""
    env = os.environ if environ is None else environ
    for rank_var, size_var in _LAUNCHER_VARS:
        if rank_var not in env:
            continue
        rank = _env_int(env, rank_var, 0)
        if size_var is None:
            size_var = next((v for v in _SIZE_FALLBACKS if v in env), None)
            if size_var is None:
                raise RuntimeError(
                    f"MPIClusterResolver: {rank_var} is set but no variable gives the job size "
                    f"(looked for {', '.join(_SIZE_FALLBACKS)}); launch with Open MPI's mpiexec "
                    "or set one of them")
        elif size_var not in env:
            raise RuntimeError(f"MPIClusterResolver: {rank_var} is set but {size_var} is not")
        size = _env_int(env, size_var, 1)
        if rank >= size:
            raise RuntimeError(f"MPIClusterResolver: rank {rank} ({rank_var}) is not below the "
                               f"job size {size} ({size_var})")
        return rank, size
    return 0, 1


def local_rank_from_env(environ=None):
    """This process's rank among the ranks of its host (picks its GPU), or None when the
    launcher does not say; 0 without a launcher."""
    env = os.environ if environ is None else environ
    for name in _LOCAL_RANK_VARS:
        if name in env:
            return _env_int(env, name, 0)
    return 0 if rank_and_size_from_env(env)[1] == 1 else None


class MPIClusterResolver(ClusterResolver):
    """The cluster of an ``mpiexec`` job (no TF counterpart; TF 2.4 resolves through TF_CONFIG,
    Slurm or cloud APIs). With ``num_ps=0`` every rank is a ``"worker"`` whose ``task_id`` is its
    rank, and worker 0 is the chief (TF's convention when there is no ``"chief"`` job). With
    ``num_ps > 0`` (parameter-server training): rank 0 is the ``"chief"``, ranks ``1..num_ps``
    the ``"ps"`` tasks and the rest the ``"worker"`` tasks (each numbered from 0 in its job).
    Addresses in ``cluster_spec()`` are names of ranks (``"mpi-rank-3"``), not network
    addresses: MPI carries the traffic. When ``TF_CONFIG`` names a cluster, it must describe
    this job (ValueError otherwise, naming both views): as many tasks as ranks, this rank's
    task number ``rank`` (the chief first, then the ps tasks, then the workers)."""

    _source_name = "MPI"

    def __init__(self, num_ps=0, rpc_layer="mpi"):
        if isinstance(num_ps, bool) or not isinstance(num_ps, numbers.Integral):
            raise TypeError(f"MPIClusterResolver: num_ps must be an integer, got {num_ps!r}")
        if num_ps < 0:
            raise ValueError(f"MPIClusterResolver: num_ps must be >= 0, got {num_ps}")
        num_ps = int(num_ps)
        rank, size = rank_and_size_from_env()
        if num_ps and size < num_ps + 2:
            raise ValueError(f"MPIClusterResolver(num_ps={num_ps}) needs at least {num_ps + 2} "
                             f"ranks (a chief, {num_ps} ps and at least one worker), but the job "
                             f"has {size}{'' if size > 1 else ' (not launched by mpiexec?)'}")
        self._rank, self._size, self._num_ps = rank, size, num_ps
        self._rpc_layer = rpc_layer
        self._task_type, self._task_id = self._role(rank)
        self._check_tf_config()

    def _check_tf_config(self):
        # TF_CONFIG, when it names a cluster, describes this same job: it must agree
        from .mpi_agreement import MPI_JOB_ORDER, check_resolver_against_mpi
        from .tfconfig_cluster_resolver import TFConfigClusterResolver
        tf_config = TFConfigClusterResolver()
        spec = tf_config.cluster_spec().as_dict()
        if not spec:
            return
        who = f"MPIClusterResolver(num_ps={self._num_ps})"
        jobs = MPI_JOB_ORDER if self._num_ps else ("chief", "worker")
        check_resolver_against_mpi(who, tf_config, self._rank, self._size, jobs)
        if self._num_ps:
            theirs = [len(spec.get(job) or ()) for job in jobs]
            ours = [sum(self._role(r)[0] == job for r in range(self._size)) for job in jobs]
            if theirs != ours:
                def layout(counts):
                    return ", ".join(f"{n} {job}" for n, job in zip(counts, jobs))
                raise ValueError(f"{who}: TF_CONFIG lays the job out as {layout(theirs)}, but "
                                 f"{who} as {layout(ours)} (rank 0 the chief, then the ps "
                                 f"tasks, then the workers); make them agree or leave "
                                 f"TF_CONFIG unset")

    def _role(self, rank):
        num_ps = self._num_ps
        if num_ps == 0:
            return "worker", rank
        if rank == 0:
            return "chief", 0
        if rank <= num_ps:
            return "ps", rank - 1
        return "worker", rank - 1 - num_ps

    @staticmethod
    def _address(rank):
        return f"mpi-rank-{rank}"

    @property
    def rank(self):
        """This process's rank in the MPI job."""
        return self._rank

    @property
    def size(self):
        """The number of ranks in the MPI job."""
        return self._size

    @property
    def local_rank(self):
        """This process's rank among those of its host, or None if the launcher does not say."""
        return local_rank_from_env()

    @property
    def num_ps(self):
        return self._num_ps

    @property
    def num_workers(self):
        """The number of ``"worker"`` tasks (all ranks with ``num_ps=0``)."""
        return self._size if self._num_ps == 0 else self._size - 1 - self._num_ps

    @property
    def is_chief(self):
        """Whether this rank is the chief: the ``"chief"`` task, else worker 0."""
        if self._num_ps:
            return self.task_type == "chief"
        return self.task_type == "worker" and self.task_id == 0

    def cluster_spec(self):
        """``{"worker": [...]}`` (with ps: ``{"chief": [...], "ps": [...], "worker": [...]}``),
        one address per rank, in rank order."""
        jobs = {}
        for r in range(self._size):
            jobs.setdefault(self._role(r)[0], []).append(self._address(r))
        return ClusterSpec(jobs)

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The address of the given task (default: this one), prefixed with the rpc layer;
        ``""`` for a job of one rank (as TF's TF_CONFIG resolver)."""
        rpc_layer = rpc_layer if rpc_layer is not None else self.rpc_layer
        if task_type is not None and task_id is not None:
            return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                     rpc_layer)
        if self._size == 1:
            return ""
        return format_master_url(self._address(self._rank), rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """``{"GPU": n}`` for the GPUs this rank sees (``{}`` without any); every rank is
        assumed to see as many (mpi4py is not asked)."""
        del task_type, task_id, config_proto
        return local_accelerators()
