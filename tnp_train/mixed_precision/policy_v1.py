"""TF 2.4's experimental ``Policy`` (``PolicyV1`` in TF): a policy with a loss scale.

It lives beside the current ``Policy``, below the layers, because a serialized policy with a
``loss_scale`` deserializes to it (``Policy.from_config``); ``tt.mixed_precision.experimental``,
which also holds the experimental ``LossScaleOptimizer`` (an optimizer, a floor up), exports it.
"""
from __future__ import annotations

import math
import numbers
import sys

from . import policy as _policy

__all__ = ["Policy", "check_loss_scale"]


def check_loss_scale(loss_scale, who):
    """``loss_scale`` as a policy keeps it: None, ``"dynamic"``, a positive number (a float),
    or a ``DynamicLossScale`` (a ``FixedLossScale`` is kept as its number); a ValueError naming
    ``who`` for anything else."""
    if isinstance(loss_scale, str) and loss_scale == "dynamic" or loss_scale is None:
        return loss_scale
    # the loss scales sit a floor up, with the optimizer: an instance means they are loaded
    ls = sys.modules.get("tnp_train.mixed_precision.loss_scale")
    if ls is not None and isinstance(loss_scale, ls.FixedLossScale):
        return loss_scale.loss_scale_value
    if ls is not None and isinstance(loss_scale, ls.DynamicLossScale):
        return loss_scale
    if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real) or \
            not math.isfinite(loss_scale) or loss_scale <= 0:
        raise ValueError(f"{who}: Invalid loss_scale: {loss_scale!r} (expected 'dynamic', "
                         f"'auto' for a Policy, a positive number, or None)")
    return float(loss_scale)


class Policy(_policy.Policy):
    """Mirrors ``tf.keras.mixed_precision.experimental.Policy(name, loss_scale="auto")`` (TF
    2.4): a :class:`~tnp_train.mixed_precision.Policy` with the loss scale ``compile`` applies
    (``"auto"``: ``"dynamic"`` for ``"mixed_float16"``, else None; a ``FixedLossScale`` is kept
    as its number, a ``DynamicLossScale`` as itself)."""

    def __init__(self, name, loss_scale="auto"):
        super().__init__(name)
        if loss_scale == "auto":
            loss_scale = "dynamic" if self.name == "mixed_float16" else None
        self._loss_scale = check_loss_scale(loss_scale, "Policy")

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
