"""Mixed precision (``tt.mixed_precision``): dtype policies and loss scaling.

``Policy`` / ``set_global_policy`` / ``global_policy`` (TF 2.4's ``tf.keras.mixed_precision``):
``"mixed_float16"`` and ``"mixed_bfloat16"`` compute in 16 bits and keep float32 variables;
``LossScaleOptimizer`` keeps float16 gradients from underflowing. See docs/mixed-precision.md.
"""
from .policy import Policy, global_policy, set_global_policy, get_policy
from .loss_scale_optimizer import LossScaleOptimizer
from . import experimental

__all__ = ["Policy", "global_policy", "set_global_policy", "get_policy", "LossScaleOptimizer",
           "experimental"]
