"""Lion (Keras's ``keras.optimizers.Lion``; TF 2.4 has none)."""
from __future__ import annotations

from . import kernels
from .base_optimizer import Optimizer

__all__ = ["Lion"]


class Lion(Optimizer):
    """Mirrors ``tf.keras.optimizers.Lion(learning_rate=0.0001, beta_1=0.9, beta_2=0.99,
    name="Lion", **kwargs)`` (tf.keras 2.13's default rate; Keras 3 uses 0.001):
    ``w -= lr * sign(b1 m + (1-b1) g); m = b2 m + (1-b2) g``. Slot: "momentum"."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.0001, beta_1=0.9, beta_2=0.99, name="Lion", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        for k, v in (("beta_1", beta_1), ("beta_2", beta_2)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"Lion: `{k}` must be a number in [0, 1], got {v!r}")
        if beta_1 == 0:
            raise ValueError("Lion: `beta_1` must be in (0, 1], got 0 (the update would ignore "
                             "the momentum)")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def build(self, var_list):
        for v in var_list:
            self.add_slot(v, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        m = self.slots_for(variable)["momentum"]
        variable.update(kernels.lion, gradient, m, learning_rate, self.beta_1, self.beta_2,
                        self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}


Lion._elementwise_update = Lion    # see Optimizer.is_elementwise
