"""Mixed precision (``tt.mixed_precision``): dtype policies and loss scaling.

``Policy`` / ``set_global_policy`` / ``global_policy`` (TF 2.4's ``tf.keras.mixed_precision``):
``"mixed_float16"`` and ``"mixed_bfloat16"`` compute in 16 bits and keep float32 variables;
``LossScaleOptimizer`` keeps float16 gradients from underflowing. See docs/mixed-precision.md.

``Policy`` sits below the layers; ``LossScaleOptimizer`` (and ``experimental``, which uses it)
is an optimizer, a layer higher, so it is imported on first use: importing the policy does not
import the optimizers.
"""
from .policy import Policy, global_policy, set_global_policy, get_policy
from ..utils.lazy import lazy_attributes as _lazy_attributes

__all__ = ["Policy", "global_policy", "set_global_policy", "get_policy", "LossScaleOptimizer",
           "experimental"]
__getattr__, __dir__ = _lazy_attributes(__name__, {"LossScaleOptimizer": "loss_scale_optimizer"},
                                        ("experimental",))
