"""``tt.mixed_precision.experimental``: TF 2.4's older mixed-precision names
(``tf.keras.mixed_precision.experimental``), kept for programs written against them, and the
loss scales of ``tf.mixed_precision.experimental`` (``LossScale``, ``FixedLossScale``,
``DynamicLossScale``).

The experimental ``Policy`` takes a ``loss_scale`` (``"auto"``: dynamic loss scaling for
``"mixed_float16"``, none otherwise; ``"dynamic"``; a number for a fixed scale; None), which
``compile`` honours by wrapping the optimizer; the experimental ``LossScaleOptimizer(optimizer,
loss_scale)`` is the current one configured from that one argument (``"dynamic"``, a number, a
``FixedLossScale`` or a ``DynamicLossScale`` whose multiplier is 2, as in TF 2.4).
"""

from __future__ import annotations

from ..utils.serialization import builtin_objects
from . import loss_scale_optimizer as _lso
from . import policy as _policy
from .loss_scale import DynamicLossScale, FixedLossScale, LossScale
from .policy_v1 import Policy

__all__ = ["Policy", "LossScaleOptimizer", "global_policy", "set_policy", "get_layer_policy",
           "LossScale", "FixedLossScale", "DynamicLossScale"]


class LossScaleOptimizer(_lso.LossScaleOptimizer):
    """Mirrors ``tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer,
    loss_scale)`` (TF 2.4): ``loss_scale="dynamic"`` scales dynamically (from 2**15, doubling
    after 2000 finite steps); a number or a ``FixedLossScale`` is a fixed scale; a
    ``DynamicLossScale`` gives its initial scale and increment period (its multiplier must be
    2). As in TF 2.4 the optimizer keeps a loss scale of its own made from these settings (the
    one given is not updated). Saved, it is the current ``LossScaleOptimizer`` (as TF 2.4 saves
    it)."""

    def __init__(self, optimizer, loss_scale):
        super().__init__(optimizer, **_lso.arguments_from_loss_scale(loss_scale))

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Mirrors the experimental ``LossScaleOptimizer.from_config``: the current config
        (``inner_optimizer``, ``dynamic``, ...) or TF 2.3's (``optimizer``, ``loss_scale``)."""
        from .. import optimizers as _optimizers
        config = dict(config)
        if "loss_scale" in config:
            inner, scale = config.pop("optimizer"), config.pop("loss_scale")
        else:
            inner = config.pop("inner_optimizer")
            if config.get("dynamic", True):
                scale = DynamicLossScale(config.get("initial_scale") or 2 ** 15,
                                         config.get("dynamic_growth_steps") or 2000, 2.)
            else:
                scale = FixedLossScale(config["initial_scale"])
        if isinstance(inner, dict):
            inner = _optimizers.deserialize(inner, custom_objects=custom_objects)
        return cls(inner, scale)


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
