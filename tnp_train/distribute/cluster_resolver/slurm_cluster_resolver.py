"""``SlurmClusterResolver``: the cluster of a Slurm job step (``srun``), from Slurm's variables.

Slurm writes its lists compressed: a host list ``node[01-03,7],gpu5`` (a bracket holds numbers
and ranges, zero-padded as the range's first bound is) and tasks per node ``2(x3),1`` (2 tasks
on each of 3 nodes, then 1). Under ``srun --mpi=pmix`` the step's tasks are the ranks of the MPI
job, so the resolver checks its task against the rank MPI gives this process.
"""
from __future__ import annotations

import numbers
import os
import re

from .cluster_resolver import ClusterResolver, format_master_url, local_accelerators
from .cluster_spec import ClusterSpec

__all__ = ["SlurmClusterResolver", "expand_hostlist", "expand_tasks_per_node"]

_HOST_PART = re.compile(r"([^,\[\]]*)(?:\[([^\]]+)\])?$")
_TASKS_PART = re.compile(r"(\d+)(?:\(x(\d+)\))?$")


def _split_outside_brackets(text):
    parts, depth, current = [], 0, ""
    for c in text:
        if c == "[":
            if depth:
                raise ValueError("nested '['")
            depth = 1
        elif c == "]":
            if not depth:
                raise ValueError("']' without '['")
            depth = 0
        elif c == "," and not depth:
            if not current:
                raise ValueError("an empty host name")
            parts.append(current)
            current = ""
            continue
        current += c
    if depth:
        raise ValueError("'[' without ']'")
    if current:
        parts.append(current)
    return parts


def _expand_range(expression):
    for item in expression.split(","):
        bounds = item.split("-")
        if len(bounds) == 1:
            bounds = bounds * 2
        if len(bounds) != 2 or not all(b.isdigit() for b in bounds):
            raise ValueError(f"bad range {item!r}")
        width = len(bounds[0])
        for i in range(int(bounds[0]), int(bounds[1]) + 1):
            yield str(i).zfill(width)


def expand_hostlist(hostlist):
    """Slurm's compressed host list as a list of host names, in order, duplicates kept
    (``"n[1-2],m5"`` -> ``["n1", "n2", "m5"]``), as TF's function of this name."""
    hosts = []
    try:
        for part in _split_outside_brackets(hostlist):
            m = _HOST_PART.match(part)
            if m is None:
                raise ValueError(f"bad part {part!r}")
            prefix, ranges = m.group(1), m.group(2)
            if ranges is None:
                hosts.append(prefix)
            else:
                hosts.extend(prefix + n for n in _expand_range(ranges))
    except ValueError as e:
        raise ValueError(f'Invalid hostlist format "{hostlist}": {e}') from None
    return hosts


def expand_tasks_per_node(tasks_per_node):
    """Slurm's tasks-per-node list as one count per node (``"3(x2),2,1"`` -> ``[3, 3, 2, 1]``),
    as TF's function of this name."""
    counts = []
    for part in tasks_per_node.split(","):
        m = _TASKS_PART.match(part)
        if m is None:
            raise ValueError(f'Invalid tasks-per-node list format "{tasks_per_node}": bad '
                             f'part {part!r}')
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
    return counts


def _slurm_var(*names):
    """The first of Slurm's variables ``names`` that is set (the step's before the job's)."""
    for name in names:
        if name in os.environ:
            return os.environ[name]
    raise RuntimeError(f"SlurmClusterResolver: {' or '.join(names)} not found in environment. "
                       f"Not running inside a SLURM step?")


def _slurm_int(*names):
    raw = _slurm_var(*names)
    try:
        return int(raw)
    except ValueError:
        raise RuntimeError(f"SlurmClusterResolver: Slurm's variable {names[0]}={raw!r} is not "
                           f"an integer") from None


def _gpus_on_node():
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    return local_accelerators().get("GPU", 0)


class SlurmClusterResolver(ClusterResolver):
    """Mirrors ``tf.distribute.cluster_resolver.SlurmClusterResolver(jobs=None,
    port_base=8888, gpus_per_node=None, gpus_per_task=None, tasks_per_node=None,
    auto_set_gpu=True, rpc_layer='grpc')``: reads ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``,
    ``SLURM_STEP_NODELIST`` and ``SLURM_STEP_TASKS_PER_NODE`` (the job's ``SLURM_NTASKS``,
    ``SLURM_JOB_NODELIST``, ``SLURM_TASKS_PER_NODE`` when a step's are missing). ``jobs``
    (``{job: number of tasks}``, default every task a ``"worker"``) takes the step's tasks in
    the jobs' alphabetical order (``chief``, ``ps``, ``worker``: the order ranks have here);
    addresses are ``host:port``, hosts sorted by name, ports from ``port_base`` on each host.
    With ``auto_set_gpu`` each task's GPUs are set in ``CUDA_VISIBLE_DEVICES`` when the cluster
    is resolved (it takes effect only before this process first uses a GPU).

    Differs from TF: ``task_type``/``task_id`` are known from construction (TF's are None until
    ``cluster_spec()`` is called); ``gpus_per_node`` defaults to the GPUs this process sees
    (TF runs ``nvidia-smi``), and a node without GPUs gives its tasks none (TF fails); under
    an MPI launcher, ``SLURM_PROCID`` and the number of tasks must be the MPI rank and size
    (ValueError naming both otherwise: ``mpiexec`` inside an allocation is a step of one
    task)."""

    _source_name = "Slurm"

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
                 tasks_per_node=None, auto_set_gpu=True, rpc_layer="grpc"):
        self._rank = _slurm_int("SLURM_PROCID")
        num_tasks = None
        if jobs is None:
            num_tasks = _slurm_int("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
            jobs = {"worker": num_tasks}
        if not isinstance(jobs, dict) or not all(
                isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0
                for n in jobs.values()):
            raise TypeError(f"SlurmClusterResolver: jobs must be a dict from job names to "
                            f"numbers of tasks, got {jobs!r}")
        self._jobs = {str(job): int(n) for job, n in jobs.items()}
        self._port_base = int(port_base)
        if tasks_per_node is None:
            hosts = expand_hostlist(_slurm_var("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"))
            counts = expand_tasks_per_node(_slurm_var("SLURM_STEP_TASKS_PER_NODE",
                                                      "SLURM_TASKS_PER_NODE"))
            if len(counts) != len(hosts):
                raise RuntimeError(f"SlurmClusterResolver: the step has {len(hosts)} node(s) "
                                   f"({hosts}) but tasks per node for {len(counts)} "
                                   f"({counts})")
            self._task_configuration = dict(zip(hosts, counts))
        elif isinstance(tasks_per_node, dict):
            self._task_configuration = {str(h): int(n) for h, n in tasks_per_node.items()}
        else:
            hosts = expand_hostlist(_slurm_var("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"))
            self._task_configuration = {h: int(tasks_per_node) for h in hosts}
        max_per_node = max(self._task_configuration.values(), default=0)
        total = sum(self._task_configuration.values())
        if gpus_per_node is None:
            gpus_per_node = _gpus_on_node()
        if gpus_per_task is None:
            gpus_per_task = gpus_per_node // max_per_node if max_per_node else 0
        self._gpus_per_node = int(gpus_per_node)
        self._gpus_per_task = int(gpus_per_task)
        self._auto_set_gpu = auto_set_gpu
        self._rpc_layer = rpc_layer
        if max_per_node * self._gpus_per_task > self._gpus_per_node:
            raise RuntimeError("Requested more GPUs per node than available.")
        if sum(self._jobs.values()) != total:
            raise RuntimeError(f"Requested {sum(self._jobs.values())} tasks but only {total} "
                               f"were assigned.")
        if not 0 <= self._rank < total:
            raise RuntimeError(f"SlurmClusterResolver: SLURM_PROCID={self._rank} is not below "
                               f"the step's {total} tasks")
        self._task_type, self._task_id = self._task_of_rank(self._rank)
        self._check_mpi()

    def _task_of_rank(self, rank):
        start = 0
        for job, n in sorted(self._jobs.items()):
            if start <= rank < start + n:
                return job, rank - start
            start += n
        return None, None

    def _check_mpi(self):
        from .mpi_agreement import check_against_mpi
        from .mpi_cluster_resolver import rank_and_size_from_env
        rank, size = rank_and_size_from_env()
        if size == 1:
            return          # no MPI launcher (a step of one task, or the resolver looked at)
        check_against_mpi("SlurmClusterResolver", "Slurm (SLURM_PROCID, the step's tasks)",
                          f"{self._task_type}:{self._task_id}", self._rank,
                          sum(self._jobs.values()), rank, size)

    def _layout(self):
        addresses, gpus = [], []
        for host, n in sorted(self._task_configuration.items()):
            for slot in range(n):
                addresses.append(f"{host}:{self._port_base + slot}")
                first = slot * self._gpus_per_task
                gpus.append(",".join(str(g) for g in range(first, first + self._gpus_per_task)))
        return addresses, gpus

    def cluster_spec(self):
        """The step's tasks as a ClusterSpec (``{"worker": ["host:8888", ...]}`` by default);
        with ``auto_set_gpu`` (and GPUs per task) sets this task's ``CUDA_VISIBLE_DEVICES``."""
        addresses, gpus = self._layout()
        jobs, start = {}, 0
        for job, n in sorted(self._jobs.items()):
            jobs[job] = addresses[start:start + n]
            start += n
        # as TF: resolving the cluster names this process's task again
        self._task_type, self._task_id = self._task_of_rank(self._rank)
        if self._auto_set_gpu and self._gpus_per_task:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus[self._rank]
        return ClusterSpec(jobs)

    def get_task_info(self):
        """``(task_type, task_id)`` of this process (TF's method)."""
        return self.task_type, self.task_id

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The address of the given task (default: this one), prefixed with the rpc layer."""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                 rpc_layer or self.rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """``{"GPU": gpus_per_task}``."""
        del task_type, task_id, config_proto
        return {"GPU": self._gpus_per_task}
