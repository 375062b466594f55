"""``tt.mixed_precision.experimental``: TF 2.4's older mixed-precision names
(``tf.keras.mixed_precision.experimental``), kept for programs written against them.

The experimental ``Policy`` takes a ``loss_scale`` (``"auto"``: dynamic loss scaling for
``"mixed_float16"``, none otherwise; ``"dynamic"``; a number for a fixed scale; None), which
``compile`` honours by wrapping the optimizer; the experimental ``LossScaleOptimizer(optimizer,
loss_scale)`` is the current one configured from that one argument.
"""
from __future__ import annotations

from ..utils.serialization import builtin_objects
from . import loss_scale_optimizer as _lso
from . import policy as _policy
from .policy_v1 import Policy, check_loss_scale as _check_loss_scale

__all__ = ["Policy", "LossScaleOptimizer", "global_policy", "set_policy", "get_layer_policy"]


class LossScaleOptimizer(_lso.LossScaleOptimizer):
    """Mirrors ``tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer,
    loss_scale)`` (TF 2.4): ``loss_scale="dynamic"`` scales dynamically (from 2**15, doubling
    after 2000 finite steps); a number is a fixed scale. Saved, it is the current
    ``LossScaleOptimizer`` (as TF 2.4 saves it)."""

    def __init__(self, optimizer, loss_scale):
        scale = _check_loss_scale(loss_scale, "LossScaleOptimizer")
        if scale is None:
            raise ValueError("LossScaleOptimizer: loss_scale must be 'dynamic' or a positive "
                             "number, got None")
        if scale == "dynamic":
            super().__init__(optimizer)
        else:
            super().__init__(optimizer, dynamic=False, initial_scale=scale)


def global_policy():
    """Mirrors ``tf.keras.mixed_precision.experimental.global_policy()``."""
    return _policy.global_policy()


def set_policy(policy):
    """Mirrors ``tf.keras.mixed_precision.experimental.set_policy(policy)``: a name (made an
    experimental :class:`Policy`, so ``"mixed_float16"`` carries dynamic loss scaling), a
    policy, or None for ``float32``."""
    if isinstance(policy, str):
        policy = Policy(policy)
    _policy.set_global_policy(policy)


def get_layer_policy(layer):
    """Mirrors ``tf.keras.mixed_precision.experimental.get_layer_policy(layer)``: the layer's
    dtype policy."""
    # the layers sit above: their Layer class is in the registry once they are imported (and
    # before that no object is a layer)
    Layer = builtin_objects("layer").get("Layer")
    if Layer is None or not isinstance(layer, Layer):
        raise ValueError(f"get_policy can only be called on a layer, but got: {layer!r}")
    return layer.dtype_policy
