"""FTRL-Proximal (``tf.keras.optimizers.Ftrl``)."""
from __future__ import annotations

from .base_optimizer import Optimizer

__all__ = ["Ftrl"]


def _non_negative(owner, **values):
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{owner}: `{name}` must be a number >= 0, got {v!r}")
    return [float(v) for v in values.values()]


def _ftrl(w, g, acc, lin, lr, power, l1, l2, shrinkage):
    """TF's ``ApplyFtrlV2`` kernel (``ApplyFtrl`` when ``shrinkage`` is 0): with ``n`` the new
    accumulator, ``lin += g_s - (n^-p - acc^-p) / lr * w``; ``w = (sign(lin) l1 - lin) /
    (n^-p / lr + 2 l2)`` where ``|lin| > l1``, else 0. ``g_s = g + 2 shrinkage w``; the
    accumulator grows by ``g^2`` of the plain gradient, as in TF."""
    g_s = g + (2 * shrinkage) * w if shrinkage else g
    new = acc + g * g
    if power == -0.5:
        p_new, p_old = new ** 0.5, acc ** 0.5
    else:
        p_new, p_old = new ** -power, acc ** -power
    lin += g_s - (p_new - p_old) / lr * w
    quadratic = p_new / lr + 2 * l2
    sign = (lin > 0).astype(w.dtype) - (lin < 0).astype(w.dtype)
    keep = (abs(lin) > l1).astype(w.dtype)
    w[...] = keep * (sign * l1 - lin) / quadratic
    acc[...] = new


class Ftrl(Optimizer):
    """Mirrors ``tf.keras.optimizers.Ftrl(learning_rate=0.001, learning_rate_power=-0.5,
    initial_accumulator_value=0.1, l1_regularization_strength=0.0,
    l2_regularization_strength=0.0, name="Ftrl", l2_shrinkage_regularization_strength=0.0,
    beta=0.0, **kwargs)`` (TF 2.4): TF's FTRL kernels, with ``beta / (2 lr)`` added to the L2
    strength as Keras does. Slots: "accumulator" (starting at ``initial_accumulator_value``),
    "linear"."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, name="Ftrl",
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        (self.initial_accumulator_value, self.l1_regularization_strength,
         self.l2_regularization_strength, self.l2_shrinkage_regularization_strength,
         self.beta) = _non_negative(
            name, initial_accumulator_value=initial_accumulator_value,
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength,
            beta=beta)
        p = learning_rate_power
        if isinstance(p, bool) or not isinstance(p, (int, float)) or p > 0:
            raise ValueError(f"{name}: `learning_rate_power` must be a number <= 0, got {p!r}")
        self.learning_rate_power = float(p)

    def build(self, var_list):
        for v in var_list:
            self.add_slot(v, "accumulator", self.initial_accumulator_value)
            self.add_slot(v, "linear", "zeros")

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        lr = float(learning_rate)
        l2 = self.l2_regularization_strength + self.beta / (2.0 * lr)
        variable.update(_ftrl, gradient, slots["accumulator"], slots["linear"], lr,
                        self.learning_rate_power, self.l1_regularization_strength, l2,
                        self.l2_shrinkage_regularization_strength)

    def get_config(self):
        return {**super().get_config(),
                "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength,
                "beta": self.beta}


Ftrl._elementwise_update = Ftrl    # see Optimizer.is_elementwise
