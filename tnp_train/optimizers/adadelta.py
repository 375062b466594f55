"""Adadelta (``tf.keras.optimizers.Adadelta``)."""
from __future__ import annotations

from . import kernels
from .adam import _check_eps
from .base_optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Mirrors ``tf.keras.optimizers.Adadelta(learning_rate=0.001, rho=0.95, epsilon=1e-07,
    name="Adadelta", **kwargs)`` (TF 2.4): ``acc = rho acc + (1-rho) g^2;
    u = sqrt(acc_u + eps) / sqrt(acc + eps) * g; acc_u = rho acc_u + (1-rho) u^2; w -= lr u``.
    Slots: "accum_grad" (acc), "accum_var" (acc_u)."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0 <= rho <= 1:
            raise ValueError(f"Adadelta: `rho` must be a number in [0, 1], got {rho!r}")
        self.rho = float(rho)
        self.epsilon = _check_eps(name, epsilon)

    def build(self, var_list):
        self._add_slots(var_list, "accum_grad", "accum_var")

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        variable.update(kernels.adadelta, gradient, slots["accum_grad"], slots["accum_var"],
                        learning_rate, self.rho, self.epsilon,
                        self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


Adadelta._elementwise_update = Adadelta    # see Optimizer.is_elementwise
