"""``KubernetesClusterResolver``: the cluster of the running pods that label selectors pick.

The pods are listed through the Kubernetes API: the ``kubernetes`` package's ``CoreV1Api``, or
any object given as ``override_client`` with its ``list_pod_for_all_namespaces(label_selector=)``
(which is how the tests, and a cluster reached some other way, provide the pods).
"""
from __future__ import annotations

import os

from .cluster_resolver import ClusterResolver, format_master_url
from .cluster_spec import ClusterSpec

__all__ = ["KubernetesClusterResolver"]


def _kubernetes_client():
    """``kubernetes.client.CoreV1Api()`` configured in the cluster (a pod's service account)
    when running in one, else from the user's kube config."""
    try:
        from kubernetes import client as k8sclient
        from kubernetes import config as k8sconfig
    except ImportError:
        raise ImportError("The Kubernetes Python client must be installed before using the "
                          "Kubernetes Cluster Resolver. To install the Kubernetes Python client, "
                          "run `pip install kubernetes` on your command line.") from None
    if "KUBERNETES_SERVICE_HOST" in os.environ:
        k8sconfig.load_incluster_config()
    else:
        k8sconfig.load_kube_config()
    return k8sclient.CoreV1Api()


class KubernetesClusterResolver(ClusterResolver):
    """Mirrors ``tf.distribute.cluster_resolver.KubernetesClusterResolver(
    job_to_label_mapping=None, tf_server_port=8470, rpc_layer='grpc', override_client=None)``.
    ``job_to_label_mapping`` maps each job to label selectors (default ``{"worker":
    ["job-name=tensorflow"]}``); ``cluster_spec()`` lists the pods each selector picks, sorted by
    pod name, as ``host_ip:tf_server_port`` (TF's addresses), and raises RuntimeError for a pod
    that is not ``Running``. As in TF, ``task_type`` and ``task_id`` are None until set; a
    strategy then takes this process's task from its MPI rank (the chief, then the ps tasks,
    then the workers), and checks that the pods are as many as the ranks (one rank per pod:
    Kubeflow's MPI Operator with ``slotsPerWorker: 1``).

    Without ``override_client`` the ``kubernetes`` package is required (ImportError otherwise,
    as in TF) and configured in-cluster when ``KUBERNETES_SERVICE_HOST`` is set (a pod), else
    from the kube config (TF 2.4 always reads the kube config)."""

    _source_name = "Kubernetes (the pods its label selectors pick)"

    def __init__(self, job_to_label_mapping=None, tf_server_port=8470, rpc_layer="grpc",
                 override_client=None):
        if override_client is None:
            override_client = _kubernetes_client()
        if not hasattr(override_client, "list_pod_for_all_namespaces"):
            raise ValueError(f"KubernetesClusterResolver: override_client must have the "
                             f"Kubernetes CoreV1Api's list_pod_for_all_namespaces(label_selector="
                             f"...), got {type(override_client).__name__}")
        if not job_to_label_mapping:
            job_to_label_mapping = {"worker": ["job-name=tensorflow"]}
        if not isinstance(job_to_label_mapping, dict):
            raise TypeError(f"KubernetesClusterResolver: job_to_label_mapping must be a dict "
                            f"from job names to lists of label selectors, got "
                            f"{type(job_to_label_mapping).__name__}")
        for job, selectors in job_to_label_mapping.items():
            if isinstance(selectors, str) or not isinstance(selectors, (list, tuple)):
                raise TypeError(f"KubernetesClusterResolver: the label selectors of job {job!r} "
                                f"must be a list of strings, got {selectors!r}")
        self._job_to_label_mapping = job_to_label_mapping
        self._tf_server_port = tf_server_port
        self._client = override_client
        self._task_type = None
        self._task_id = None
        self._rpc_layer = rpc_layer

    def cluster_spec(self):
        """The running pods of each job, asked of the Kubernetes API on every call."""
        cluster = {}
        for job, selectors in self._job_to_label_mapping.items():
            addresses = []
            for selector in selectors:
                pods = self._client.list_pod_for_all_namespaces(label_selector=selector).items
                for pod in sorted(pods, key=lambda p: p.metadata.name):
                    if pod.status.phase != "Running":
                        raise RuntimeError(f'Pod "{pod.metadata.name}" is not running; phase: '
                                           f'"{pod.status.phase}"')
                    addresses.append(f"{pod.status.host_ip}:{self._tf_server_port}")
            cluster[job] = addresses
        return ClusterSpec(cluster)

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The address of the given task (default: the one set), prefixed with the rpc layer;
        ``""`` when no task is given or set."""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                 rpc_layer or self.rpc_layer)
