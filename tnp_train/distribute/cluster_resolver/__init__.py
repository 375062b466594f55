"""``tt.distribute.cluster_resolver`` (``tf.distribute.cluster_resolver`` without the cloud
resolvers): ``ClusterResolver``, ``SimpleClusterResolver``, ``TFConfigClusterResolver``,
``UnionResolver``, and ``MPIClusterResolver`` for ``mpiexec`` jobs; ``ClusterSpec`` is also
``tt.train.ClusterSpec``."""
from .cluster_resolver import (
    ClusterResolver, SimpleClusterResolver, UnionClusterResolver, UnionResolver)
from .cluster_spec import ClusterSpec
from .mpi_cluster_resolver import MPIClusterResolver
from .tfconfig_cluster_resolver import TFConfigClusterResolver

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "UnionResolver", "UnionClusterResolver", "MPIClusterResolver", "ClusterSpec"]
