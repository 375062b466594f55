"""RMSprop (``tf.keras.optimizers.RMSprop``)."""
from __future__ import annotations

from . import kernels
from .adam import _check_eps
from .base_optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Mirrors ``tf.keras.optimizers.RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0,
    epsilon=1e-07, centered=False, name="RMSprop", **kwargs)`` (TF 2.4):
    ``ms = rho ms + (1-rho) g^2``; centered: ``mg = rho mg + (1-rho) g``, ``d = ms - mg^2``, else
    ``d = ms``; with momentum ``mom = momentum mom + lr g / sqrt(d + eps); w -= mom``, without
    ``w -= lr g / (sqrt(d) + eps)`` (TF 2.4's two epsilon placements, kept).
    Slots: "rms" (and "mg", "momentum")."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 name="RMSprop", **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        for k, v in (("rho", rho), ("momentum", momentum)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"RMSprop: `{k}` must be a number in [0, 1], got {v!r}")
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = _check_eps(name, epsilon)
        self.centered = bool(centered)

    def build(self, var_list):
        self._add_slots(var_list, "rms", *(("momentum",) if self.momentum else ()),
                        *(("mg",) if self.centered else ()))

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        variable.update(kernels.rmsprop, gradient, slots["rms"],
                        slots["mg"] if self.centered else None,
                        slots["momentum"] if self.momentum else None,
                        learning_rate, self.rho, self.momentum, self.epsilon,
                        self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


RMSprop._elementwise_update = RMSprop    # see Optimizer.is_elementwise
