"""Adam (``tf.keras.optimizers.Adam``)."""
from __future__ import annotations

import math

import tnp

from . import kernels
from .base_optimizer import Optimizer

__all__ = ["Adam"]


def _check_beta(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{owner}: `{name}` must be a number in [0, 1), got {value!r}")
    return float(value)


def _check_eps(owner, value):
    if value is None:
        return 1e-7          # Keras's backend epsilon(), as TF 2.4 when epsilon=None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{owner}: `epsilon` must be a number >= 0, got {value!r}")
    return float(value)


class Adam(Optimizer):
    """Mirrors ``tf.keras.optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999,
    epsilon=1e-07, amsgrad=False, name="Adam", **kwargs)`` (TF 2.4), at step ``t`` (1-based):
    ``m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    w -= lr sqrt(1-b2^t) / (1-b1^t) * m / (sqrt(v) + epsilon)`` (AMSGrad: ``vhat = max(vhat,
    v)`` in the denominator). Slots: "m", "v" (and "vhat")."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        self.beta_1 = _check_beta(name, "beta_1", beta_1)
        self.beta_2 = _check_beta(name, "beta_2", beta_2)
        self.epsilon = _check_eps(name, epsilon)
        self.amsgrad = bool(amsgrad)

    def build(self, var_list):
        self._add_slots(var_list, "m", "v", *(("vhat",) if self.amsgrad else ()))

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        t = self._t
        alpha = learning_rate * (math.sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t))
        variable.update(kernels.adam, gradient, slots["m"], slots["v"],
                        slots["vhat"] if self.amsgrad else None, alpha, self.beta_1, self.beta_2,
                        self.epsilon, self._decay_factor(variable, learning_rate))

    def traced_update_step(self, gradient, variable, learning_rate, step):
        slots = self.slots_for(variable)
        # update_step's float64 coefficient, from the traced step number
        alpha = learning_rate * (tnp.sqrt(1 - self.beta_2 ** step) / (1 - self.beta_1 ** step))
        kernels.adam_generic(variable, gradient, slots["m"], slots["v"],
                             slots["vhat"] if self.amsgrad else None,
                             alpha.astype(variable.dtype), self.beta_1, self.beta_2,
                             self.epsilon, 0.0)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


Adam._elementwise_update = Adam    # see Optimizer.is_elementwise
