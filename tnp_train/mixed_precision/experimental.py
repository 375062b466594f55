"""``tt.mixed_precision.experimental``: TF 2.4's older mixed-precision names
(``tf.keras.mixed_precision.experimental``), kept for programs written against them.

The experimental ``Policy`` takes a ``loss_scale`` (``"auto"``: dynamic loss scaling for
``"mixed_float16"``, none otherwise; ``"dynamic"``; a number for a fixed scale; None), which
``compile`` honours by wrapping the optimizer; the experimental ``LossScaleOptimizer(optimizer,
loss_scale)`` is the current one configured from that one argument.
"""
from __future__ import annotations

import math
import numbers

from . import loss_scale_optimizer as _lso
from . import policy as _policy

__all__ = ["Policy", "LossScaleOptimizer", "global_policy", "set_policy", "get_layer_policy"]


def _check_loss_scale(loss_scale, who):
    if loss_scale is None or loss_scale == "dynamic":
        return loss_scale
    if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real) or \
            not math.isfinite(loss_scale) or loss_scale <= 0:
        raise ValueError(f"{who}: Invalid loss_scale: {loss_scale!r} (expected 'dynamic', "
                         f"'auto' for a Policy, a positive number, or None)")
    return float(loss_scale)


class Policy(_policy.Policy):
    """Mirrors ``tf.keras.mixed_precision.experimental.Policy(name, loss_scale="auto")`` (TF
    2.4): a :class:`~tnp_train.mixed_precision.Policy` with the loss scale ``compile`` applies
    (``"auto"``: ``"dynamic"`` for ``"mixed_float16"``, else None)."""

    def __init__(self, name, loss_scale="auto"):
        super().__init__(name)
        if loss_scale == "auto":
            loss_scale = "dynamic" if self.name == "mixed_float16" else None
        self._loss_scale = _check_loss_scale(loss_scale, "Policy")

    @property
    def loss_scale(self):
        return self._loss_scale

    def __eq__(self, other):
        return isinstance(other, _policy.Policy) and other.name == self.name and \
            getattr(other, "loss_scale", self._loss_scale) == self._loss_scale

    def __hash__(self):
        return hash(("Policy", self.name, self._loss_scale))

    def __repr__(self):
        return f'<Policy "{self.name}", loss_scale={self._loss_scale!r}>'

    def get_config(self):
        return {"name": self.name, "loss_scale": self._loss_scale}


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
    from ..layers import Layer
    if not isinstance(layer, Layer):
        raise ValueError(f"get_policy can only be called on a layer, but got: {layer!r}")
    return layer.dtype_policy
