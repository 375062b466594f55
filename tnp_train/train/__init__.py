"""``tt.train``: TF 2.4's checkpoint API (``tf.train``) — ``Checkpoint``,
``CheckpointManager``, ``latest_checkpoint``, ``list_variables``, ``load_variable``,
``load_checkpoint``, ``get_checkpoint_state``. Implemented in :mod:`tnp_train.checkpoint`."""
from ..checkpoint import (Checkpoint, CheckpointManager, get_checkpoint_state, latest_checkpoint,
                          list_variables, load_checkpoint, load_variable)

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "list_variables",
           "load_variable", "load_checkpoint", "get_checkpoint_state"]
