"""SGD with momentum (``tf.keras.optimizers.SGD``)."""
from __future__ import annotations

from .base_optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Mirrors ``tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.0, nesterov=False)``:
    ``v = momentum * v - lr * g; w += v`` (Nesterov: ``w += momentum * v - lr * g``)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum = momentum
        self.nesterov = nesterov

    def build(self, var_list):
        if self.momentum:
            for v in var_list:
                self.add_slot(v, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        if not self.momentum:
            variable.assign_sub(learning_rate * gradient)
            return
        m = self.get_slot(variable, "momentum")
        m *= self.momentum                 # in place: m = momentum * m - lr * g
        m -= learning_rate * gradient
        if self.nesterov:
            variable.assign_add(self.momentum * m - learning_rate * gradient)
        else:
            variable.assign_add(m)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
