"""``get_source_inputs`` (``tf.keras.utils`` of TF 2.4)."""
from __future__ import annotations

__all__ = ["get_source_inputs"]


def get_source_inputs(tensor, layer=None, node_index=None):
    """The input tensors (``tt.Input`` outputs) that ``tensor`` is computed from, each once,
    in the order they are reached; anything that is not a symbolic tensor is returned as it
    is. Mirrors ``tf.keras.utils.get_source_inputs``."""
    node = getattr(tensor, "node", None)
    if not hasattr(tensor, "node"):
        return tensor
    if node is None or not node.inputs:
        return [tensor]                 # an input, or a tensor of no recorded call
    sources = []
    for t in node.inputs:
        for s in get_source_inputs(t):
            if all(s is not k for k in sources):
                sources.append(s)
    return sources
