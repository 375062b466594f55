"""Adagrad (``tf.keras.optimizers.Adagrad``)."""
from __future__ import annotations

from . import kernels
from .adam import _check_eps
from .base_optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Mirrors ``tf.keras.optimizers.Adagrad(learning_rate=0.001, initial_accumulator_value=0.1,
    epsilon=1e-07, name="Adagrad", **kwargs)`` (TF 2.4): ``acc += g^2;
    w -= lr g / (sqrt(acc) + epsilon)``, ``acc`` starting at ``initial_accumulator_value``.
    Slot: "accumulator"."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        v = initial_accumulator_value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"Adagrad: initial_accumulator_value must be a number >= 0, "
                             f"got {v!r}")
        self.initial_accumulator_value = float(v)
        self.epsilon = _check_eps(name, epsilon)

    def build(self, var_list):
        for v in var_list:
            self.add_slot(v, "accumulator", self.initial_accumulator_value)

    def update_step(self, gradient, variable, learning_rate):
        acc = self.slots_for(variable)["accumulator"]
        variable.update(kernels.adagrad, gradient, acc, learning_rate, self.epsilon,
                        self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


Adagrad._elementwise_update = Adagrad    # see Optimizer.is_elementwise
