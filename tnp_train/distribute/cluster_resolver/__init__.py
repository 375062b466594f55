"""``tt.distribute.cluster_resolver`` (``tf.distribute.cluster_resolver`` without the cloud
resolvers of GCE and TPUs): ``ClusterResolver``, ``SimpleClusterResolver``,
``TFConfigClusterResolver``, ``SlurmClusterResolver``, ``KubernetesClusterResolver``,
``UnionResolver``, and ``MPIClusterResolver`` for ``mpiexec`` jobs; ``ClusterSpec`` is also
``tt.train.ClusterSpec``. Whatever a resolver reads must describe the MPI job the process is a
rank of (``mpi_agreement``; docs/distributed.md, "Launching")."""
from .cluster_resolver import (
    ClusterResolver, SimpleClusterResolver, UnionClusterResolver, UnionResolver)
from .cluster_spec import ClusterSpec
from .kubernetes_cluster_resolver import KubernetesClusterResolver
from .mpi_cluster_resolver import MPIClusterResolver
from .slurm_cluster_resolver import SlurmClusterResolver
from .tfconfig_cluster_resolver import TFConfigClusterResolver

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "SlurmClusterResolver", "KubernetesClusterResolver", "UnionResolver",
           "UnionClusterResolver", "MPIClusterResolver", "ClusterSpec"]
