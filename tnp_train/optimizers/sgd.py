"""SGD with momentum (``tf.keras.optimizers.SGD``)."""
from __future__ import annotations

from . import kernels
from .base_optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Mirrors ``tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.0, nesterov=False,
    name="SGD", **kwargs)`` (TF 2.4): ``v = momentum * v - lr * g; w += v`` (Nesterov:
    ``w += momentum * v - lr * g``); without momentum ``w -= lr * g``. Slot: "momentum"."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or \
                not 0 <= momentum <= 1:
            raise ValueError(f"SGD: `momentum` must be a number in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def build(self, var_list):
        if self.momentum:
            for v in var_list:
                self.add_slot(v, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        m = self.slots_for(variable)["momentum"] if self.momentum else None
        variable.update(kernels.sgd, gradient, m, learning_rate, self.momentum, self.nesterov,
                        self._decay_factor(variable, learning_rate))

    def traced_update_step(self, gradient, variable, learning_rate, step):
        m = self.slots_for(variable)["momentum"] if self.momentum else None
        # the kernel's own arithmetic, on tnp arrays: the rate rounded to the variable's dtype
        # first, as the kernel takes it
        kernels.sgd_generic(variable, gradient, m, learning_rate.astype(variable.dtype),
                            self.momentum, self.nesterov, 0.0)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


SGD._elementwise_update = SGD    # see Optimizer.is_elementwise
