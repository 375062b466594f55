"""Fixtures of the parameter-server tests that run a whole job in this process
(``tnp_train.distribute.ps.local.LocalCluster``: the chief here, the ps and worker tasks on
threads, the MPI job's code paths with queues for a network)."""
import pytest

pytest.importorskip("cloudpickle")     # closures travel to the workers pickled (the [mpi] extra)

import tnp_train as tt  # noqa: E402
from tnp_train.distribute.ps.local import LocalCluster  # noqa: E402


@pytest.fixture
def cluster():
    c = LocalCluster(num_ps=2, num_workers=2)
    yield c
    c.shutdown()


@pytest.fixture
def strategy(cluster):
    return tt.distribute.experimental.ParameterServerStrategy(cluster.resolver)


@pytest.fixture
def coordinator(strategy):
    return tt.distribute.experimental.coordinator.ClusterCoordinator(strategy)


def server_value(cluster, v):
    """What the parameter server holds for PSVariable ``v`` (read on the server itself)."""
    import numpy as np
    h = v._ps
    if h.shards is not None:
        return np.concatenate([server_value(cluster, s) for _, _, s in h.shards], axis=0)
    server = cluster.servers[cluster.ps_ranks.index(h.ps)]
    return server.store[h.key].numpy()
