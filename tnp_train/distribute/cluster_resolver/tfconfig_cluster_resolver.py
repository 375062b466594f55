"""``TFConfigClusterResolver``: the cluster described by the ``TF_CONFIG`` environment variable."""
from __future__ import annotations

import json
import os

from .cluster_resolver import ClusterResolver, format_master_url
from .cluster_spec import ClusterSpec

__all__ = ["TFConfigClusterResolver"]


def _load_tf_config():
    raw = os.environ.get("TF_CONFIG", "{}")
    try:
        config = json.loads(raw) if raw.strip() else {}
    except ValueError as e:
        raise ValueError(f"TFConfigClusterResolver: TF_CONFIG is not valid JSON ({e}): "
                         f"{raw[:200]!r}") from None
    if not isinstance(config, dict):
        raise ValueError("TFConfigClusterResolver: TF_CONFIG must be a JSON object, got "
                         f"{raw[:200]!r}")
    return config


class TFConfigClusterResolver(ClusterResolver):
    """Mirrors ``tf.distribute.cluster_resolver.TFConfigClusterResolver(task_type=None,
    task_id=None, rpc_layer=None, environment=None)``: reads ``TF_CONFIG`` (JSON with
    ``cluster``, ``task: {type, index}``, ``rpc_layer``, ``session_master``) on every call; the
    arguments override what it says. A strategy made with it checks it against the MPI job
    (see docs/distributed.md, "Launching")."""

    _source_name = "TF_CONFIG"

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self):
        if self._task_type is not None:
            return str(self._task_type)
        task = _load_tf_config().get("task", {})
        return str(task["type"]) if "type" in task else None

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        if self._task_id is not None:
            return int(self._task_id)
        task = _load_tf_config().get("task", {})
        return int(task["index"]) if "index" in task else None

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def environment(self):
        return self._environment

    @property
    def rpc_layer(self):
        if self._rpc_layer is not None:
            return self._rpc_layer
        return _load_tf_config().get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer

    def cluster_spec(self):
        """The ``cluster`` of TF_CONFIG as a ClusterSpec (empty without one)."""
        config = _load_tf_config()
        return ClusterSpec(config["cluster"]) if "cluster" in config else ClusterSpec({})

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """``session_master`` if TF_CONFIG sets it; ``""`` for a cluster of one task; else the
        address of the given (default: this) task, prefixed with the rpc layer."""
        session_master = _load_tf_config().get("session_master")
        if session_master is not None:
            return session_master
        spec = self.cluster_spec()
        jobs = spec.jobs
        if not jobs or (len(jobs) == 1 and len(spec.job_tasks(jobs[0])) == 1):
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        rpc_layer = rpc_layer if rpc_layer is not None else self.rpc_layer
        return format_master_url(spec.task_address(task_type, task_id), rpc_layer)
