"""``tt.train``: TF 2.4's checkpoint API (``tf.train``) — ``Checkpoint``,
``CheckpointManager``, ``latest_checkpoint``, ``list_variables``, ``load_variable``,
``load_checkpoint``, ``get_checkpoint_state``. Implemented in :mod:`tnp_train.checkpoint`;
``ClusterSpec`` is :class:`tnp_train.distribute.cluster_resolver.ClusterSpec`. The
``tf.train.Example`` protocol buffers (``Example``, ``Features``, ``Feature``, ``BytesList``,
``FloatList``, ``Int64List``, ``SequenceExample``, ``FeatureList``, ``FeatureLists``) are
:mod:`tnp_train.io.example_pb2`'s (they need the ``protobuf`` package)."""
from ..checkpoint import (Checkpoint, CheckpointManager, get_checkpoint_state, latest_checkpoint,
                          list_variables, load_checkpoint, load_variable)

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "list_variables",
           "load_variable", "load_checkpoint", "get_checkpoint_state", "ClusterSpec",
           "Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
           "SequenceExample", "FeatureList", "FeatureLists"]
_PROTOS = ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
           "SequenceExample", "FeatureList", "FeatureLists")


def __getattr__(name):
    # imported on first use, so tt.train does not load the distribute package
    if name == "ClusterSpec":
        from ..distribute.cluster_resolver.cluster_spec import ClusterSpec
        return ClusterSpec
    if name in _PROTOS:
        from ..io import example_pb2
        return getattr(example_pb2, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
