"""``tt.train``: TF 2.4's checkpoint API (``tf.train``) — ``Checkpoint``,
``CheckpointManager``, ``latest_checkpoint``, ``list_variables``, ``load_variable``,
``load_checkpoint``, ``get_checkpoint_state``. Implemented in :mod:`tnp_train.checkpoint`;
``ClusterSpec`` is :class:`tnp_train.distribute.cluster_resolver.ClusterSpec`."""
from ..checkpoint import (Checkpoint, CheckpointManager, get_checkpoint_state, latest_checkpoint,
                          list_variables, load_checkpoint, load_variable)

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "list_variables",
           "load_variable", "load_checkpoint", "get_checkpoint_state", "ClusterSpec"]


def __getattr__(name):
    # imported on first use, so tt.train does not load the distribute package
    if name == "ClusterSpec":
        from ..distribute.cluster_resolver.cluster_spec import ClusterSpec
        return ClusterSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
