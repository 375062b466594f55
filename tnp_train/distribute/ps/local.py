"""A parameter-server job inside one process: the chief in the calling thread, each ps and
worker task on threads of its own, frames passed through queues (TF's in-process cluster of
``multi_worker_test_base``). The code paths are the MPI job's (the same endpoints, servers,
pickling and wire format); only the transport differs. For tests and for trying things out::

    cluster = LocalCluster(num_ps=1, num_workers=2)
    strategy = tt.distribute.experimental.ParameterServerStrategy(cluster.resolver)
    ...
    cluster.kill_worker(1)       # as if its process had died (ULFM's view of it)
    cluster.shutdown()
"""
from __future__ import annotations

from ..cluster_resolver import ClusterSpec, SimpleClusterResolver
from .chief import ChiefRuntime
from .server import ParameterServer, WorkerServer
from .transport import LocalHub

__all__ = ["LocalCluster"]


class LocalCluster:
    """``num_ps`` parameter servers and ``num_workers`` workers on threads of this process;
    ``resolver`` is what ``ParameterServerStrategy`` takes. Ranks follow the MPI layout (0 the
    chief, then the ps tasks, then the workers)."""

    def __init__(self, num_ps=1, num_workers=2):
        if num_ps < 1 or num_workers < 1:
            raise ValueError(f"LocalCluster: needs at least one ps and one worker, got "
                             f"num_ps={num_ps}, num_workers={num_workers}")
        size = 1 + num_ps + num_workers
        self.hub = LocalHub(size)
        self.ps_ranks = list(range(1, 1 + num_ps))
        self.worker_ranks = list(range(1 + num_ps, size))
        self.servers = [ParameterServer(self.hub.transport(r), 0, f"ps:{i}",
                                        on_chief_lost=lambda: None).start()
                        for i, r in enumerate(self.ps_ranks)]
        self.workers = [WorkerServer(self.hub.transport(r), i, num_workers, self.ps_ranks, 0,
                                     on_chief_lost=lambda: None).start()
                        for i, r in enumerate(self.worker_ranks)]
        self.runtime = ChiefRuntime(self.hub.transport(0), self.ps_ranks, self.worker_ranks,
                                    register_exit=False)
        self.resolver = SimpleClusterResolver(
            ClusterSpec({"chief": ["local-rank-0"],
                         "ps": [f"local-rank-{r}" for r in self.ps_ranks],
                         "worker": [f"local-rank-{r}" for r in self.worker_ranks]}),
            task_type="chief", task_id=0)
        self.resolver._ps_local_cluster = self

    def kill_worker(self, index):
        """Lose worker ``index``: it sends nothing more (a closure it is running goes on, its
        later messages dropped) and every other task is told."""
        self.hub.kill(self.worker_ranks[index])
        self._stop(self.workers[index])

    def kill_ps(self, index):
        """Lose parameter server ``index`` (its variables with it)."""
        self.hub.kill(self.ps_ranks[index])
        self._stop(self.servers[index])

    @staticmethod
    def _stop(node):
        # the dead task's threads end (a closure it runs fails its next wait), as the
        # process would be gone
        node.done.set()
        queue = getattr(node, "_queue", None)
        if queue is not None:
            queue.put(None)
        node.endpoint.stop(0)

    def shutdown(self):
        """End the job: the chief tells everyone, the threads stop."""
        self.runtime.shutdown()
        for node in self.servers + self.workers:
            node.done.wait(5.0)
            node.endpoint.stop(5.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        return False
