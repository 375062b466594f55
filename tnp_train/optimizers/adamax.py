"""Adamax (``tf.keras.optimizers.Adamax``)."""
from __future__ import annotations

from . import kernels
from .adam import _check_beta, _check_eps
from .base_optimizer import Optimizer

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Mirrors ``tf.keras.optimizers.Adamax(learning_rate=0.001, beta_1=0.9, beta_2=0.999,
    epsilon=1e-07, name="Adamax", **kwargs)`` (TF 2.4), at step ``t``:
    ``m = b1 m + (1-b1) g; u = max(b2 u, |g|); w -= lr / (1 - b1^t) * m / (u + epsilon)``.
    Slots: "m", "v" (u)."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        self.beta_1 = _check_beta(name, "beta_1", beta_1)
        self.beta_2 = _check_beta(name, "beta_2", beta_2)
        self.epsilon = _check_eps(name, epsilon)

    def build(self, var_list):
        self._add_slots(var_list, "m", "v")

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        alpha = learning_rate / (1 - self.beta_1 ** self._t)
        variable.update(kernels.adamax, gradient, slots["m"], slots["v"], alpha, self.beta_1,
                        self.beta_2, self.epsilon, self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


Adamax._elementwise_update = Adamax    # see Optimizer.is_elementwise
