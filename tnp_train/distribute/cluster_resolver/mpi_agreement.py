"""Whether a cluster resolver's view of the job agrees with the MPI job this process is in.

tnp_train's tasks talk over MPI only: no gRPC server is started, so a cluster that
``TF_CONFIG``, Slurm or Kubernetes describes is one MPI job whose ranks are its tasks, numbered
in one order: the chief, the ``ps`` tasks, then the workers (TF's ``MultiWorkerMirroredStrategy``
numbers the chief 0 and the workers after it; ``SlurmClusterResolver`` hands out ranks in that
order too). An ``evaluator`` runs beside the job, as a process of its own. A resolver that
disagrees with MPI, or that names several tasks in a process no MPI launcher started, would
train the wrong job (or every process alone): that is a ValueError naming both views.
"""
from __future__ import annotations

__all__ = ["MPI_JOB_ORDER", "source_name", "task_position", "check_against_mpi",
           "check_resolver_against_mpi"]

MPI_JOB_ORDER = ("chief", "ps", "worker")


def source_name(resolver):
    """How a message names what ``resolver`` read: ``"TF_CONFIG"``, ``"Slurm"``, ..."""
    return getattr(resolver, "_source_name", None) or f"the {type(resolver).__name__}"


def _count(spec, job):
    tasks = spec.get(job) or ()
    return len(tasks)


def task_position(spec, task_type, task_id, jobs=MPI_JOB_ORDER, who="cluster"):
    """``(index, count)``: the rank the task ``task_type:task_id`` of ``spec`` (a ClusterSpec's
    ``as_dict()``) has in the MPI job made of the tasks of ``jobs``, and the job's size. An
    ``evaluator`` is a job of its own (index 0 of 1); ``index`` is None without a task."""
    if task_type == "evaluator":
        return 0, 1
    count = sum(_count(spec, job) for job in jobs)
    if task_type is None or task_id is None:
        return None, count
    if task_type not in jobs:
        raise ValueError(f"{who}: this task is {task_type}:{task_id}, but only "
                         f"{', '.join(repr(j) for j in jobs)} tasks take part here")
    task_id = int(task_id)
    if not 0 <= task_id < _count(spec, task_type):
        raise ValueError(f"{who}: task {task_type}:{task_id} is not in the cluster "
                         f"{spec!r} (its {task_type!r} job has {_count(spec, task_type)} "
                         f"task(s))")
    before = 0
    for job in jobs:
        if job == task_type:
            break
        before += _count(spec, job)
    return before + task_id, count


def _order_words(jobs):
    return "the chief first, then the workers" if "ps" not in jobs else \
        "the chief, then the ps tasks, then the workers"


def check_against_mpi(who, source, task, index, count, rank, size, jobs=MPI_JOB_ORDER):
    """Raise ValueError unless task ``task`` (``"worker:1"``), number ``index`` of ``count``
    tasks by ``source``'s account, is rank ``rank`` of an MPI job of ``size`` (``index`` None:
    only the counts must agree)."""
    if count == size and (index is None or index == rank):
        return
    said = (f"{source} says this process is task {task} (number {index} of {count}, counting "
            f"{_order_words(jobs)})" if index is not None else
            f"{source} says the job has {count} task(s)")
    if size == 1:
        raise ValueError(
            f"{who}: {said}, but MPI says it is rank {rank} of {size}: it was not launched as "
            f"a rank of an MPI job. tnp_train's tasks talk over MPI only (no gRPC servers are "
            f"started), so on its own it would train a model of its own. Launch the {count} "
            f"tasks as one MPI "
            f"job, `mpiexec -n {count} python script.py` or `srun --mpi=pmix -n {count} python "
            f"script.py`, where rank r has the TF_CONFIG of task r or none at all (see "
            f"docs/distributed.md, 'Launching')")
    if task is not None and task.startswith("evaluator:"):
        raise ValueError(
            f"{who}: {source} says this process is the evaluator, but MPI says it is rank "
            f"{rank} of {size}: the evaluator is not a rank of the training job; start it as a "
            f"process of its own, outside mpiexec/srun")
    if source == "TF_CONFIG":
        fix = (f"Give rank r the TF_CONFIG of task r ({_order_words(jobs)}), naming as many "
               f"tasks as the job has ranks, or leave TF_CONFIG unset and let the MPI ranks "
               f"number the tasks")
    elif source.startswith("Slurm"):
        fix = ("Launch with `srun --mpi=pmix` (under mpiexec inside an allocation, Slurm's "
               "variables describe the batch step, not the MPI job), or use no "
               "SlurmClusterResolver and let the MPI ranks number the tasks")
    else:
        fix = (f"Make the resolver describe this MPI job, rank r as task r "
               f"({_order_words(jobs)}), or pass none and let the MPI ranks number the tasks")
    raise ValueError(f"{who}: {said}, but MPI says it is rank {rank} of {size}. {fix} (see "
                     f"docs/distributed.md, 'Launching')")


def check_resolver_against_mpi(who, resolver, rank, size, jobs=MPI_JOB_ORDER):
    """:func:`check_against_mpi` for ``resolver``'s task and cluster; returns ``(index,
    count)`` (``index`` None when the resolver names no task: the rank is the task)."""
    spec = resolver.cluster_spec().as_dict()
    task_type, task_id = resolver.task_type, resolver.task_id
    index, count = task_position(spec, task_type, task_id, jobs, who)
    task = None if index is None else f"{task_type}:{task_id}"
    check_against_mpi(who, source_name(resolver), task, index, max(count, 1), rank, size, jobs)
    return index, count
