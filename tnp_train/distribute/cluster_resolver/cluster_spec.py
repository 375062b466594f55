"""``tt.train.ClusterSpec`` (``tf.train.ClusterSpec``): the jobs of a cluster and their tasks."""
from __future__ import annotations

__all__ = ["ClusterSpec"]


def _check_name(value, what):
    if not isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"ClusterSpec: {what} {value!r} must be bytes or unicode")
    return value


def _text(value):
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value


class ClusterSpec:
    """Mirrors ``tf.train.ClusterSpec(cluster)``: ``cluster`` maps job names to a list of task
    addresses (task ``i`` at index ``i``) or to a dict ``{task index: address}`` (a sparse job),
    or is another ClusterSpec (copied). TF's ``ClusterDef`` protocol buffer (and
    ``as_cluster_def``) does not exist here."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            # as TF's copy through a ClusterDef: jobs and tasks sorted, names as text
            self._spec = {_text(job): {i: _text(a) for i, a in sorted(tasks.items())}
                          for job, tasks in sorted(cluster._spec.items(),
                                                   key=lambda kv: _text(kv[0]))}
            return
        if not isinstance(cluster, dict):
            raise TypeError("ClusterSpec: `cluster` must be a dictionary mapping one or more job "
                            "names to lists of network addresses (or to dicts from task index "
                            f"to address), got {type(cluster).__name__}")
        spec = {}
        for job, tasks in cluster.items():
            _check_name(job, "job name")
            if isinstance(tasks, (list, tuple)):
                job_tasks = dict(enumerate(tasks))
            elif isinstance(tasks, dict):
                job_tasks = {}
                for i, address in tasks.items():
                    if isinstance(i, bool):
                        raise TypeError(f"ClusterSpec: task index {i!r} of job {job!r} must be "
                                        "an integer")
                    job_tasks[int(i)] = address
            else:
                raise TypeError(f"ClusterSpec: the tasks for job {job!r} must be a list or a "
                                f"dictionary from integers to strings, got {type(tasks).__name__}")
            for address in job_tasks.values():
                _check_name(address, f"task address of job {job!r}")
            spec[job] = job_tasks
        self._spec = spec

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        if isinstance(other, ClusterSpec):
            return self._spec == other._spec
        return self._spec == other

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        d = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{k!r}: {d[k]!r}" for k in sorted(d)) + "})"

    def as_dict(self):
        """``{job: [addresses]}``; a job whose task indices are not ``0..n-1`` gives a dict
        ``{index: address}`` instead of a list."""
        out = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                out[job] = {}
            elif max(indices) + 1 == len(indices):
                out[job] = self.job_tasks(job)
            else:
                out[job] = {i: self.task_address(job, i) for i in indices}
        return out

    @property
    def jobs(self):
        """The job names, a list."""
        return list(self._spec)

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except (KeyError, TypeError):
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        """The number of tasks of ``job_name`` (ValueError for an unknown job)."""
        return len(self._job(job_name))

    def task_indices(self, job_name):
        """The sorted task indices of ``job_name``."""
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        """The address of task ``task_index`` of ``job_name`` (ValueError if there is none)."""
        job = self._job(job_name)
        try:
            return job[task_index]
        except (KeyError, TypeError):
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        """The addresses of ``job_name`` as a list indexed by task (None for the gaps of a
        sparse job)."""
        job = self._job(job_name)
        out = [None] * (max(job) + 1 if job else 0)
        for i, address in job.items():
            out[i] = address
        return out
