"""Nadam (``tf.keras.optimizers.Nadam``)."""
from __future__ import annotations

import numpy as _np

from ..autodiff import Variable
from . import kernels
from .adam import _check_beta, _check_eps
from .base_optimizer import Optimizer, _HostValue

__all__ = ["Nadam"]


class Nadam(Optimizer):
    """Mirrors ``tf.keras.optimizers.Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999,
    epsilon=1e-07, name="Nadam", **kwargs)`` (TF 2.4, with its momentum schedule
    ``schedule_decay=0.004``). At step ``t``: ``mu_t = b1 (1 - 0.5 * 0.96^(schedule_decay t))``,
    ``ms_t = mu_1 ... mu_t`` (kept in the "momentum_cache" variable),
    ``g' = g / (1 - ms_t); m = b1 m + (1-b1) g; m' = m / (1 - ms_t mu_{t+1});
    v = b2 v + (1-b2) g^2; v' = v / (1 - b2^t);
    w -= lr ((1 - mu_t) g' + mu_{t+1} m') / (sqrt(v') + epsilon)``. Slots: "m", "v".

    TF 2.4 stores ``schedule_decay`` in its ``decay`` slot (and ignores it for the learning
    rate); here ``decay`` keeps its base meaning (learning-rate decay, default 0)."""

    _fuses_weight_decay = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", schedule_decay=0.004, **kwargs):
        super().__init__(name, learning_rate=learning_rate, **kwargs)
        self.beta_1 = _check_beta(name, "beta_1", beta_1)
        self.beta_2 = _check_beta(name, "beta_2", beta_2)
        self.epsilon = _check_eps(name, epsilon)
        self.schedule_decay = float(schedule_decay)
        # product of the momentum schedule so far (TF keeps it in float32; float64 here)
        self._momentum_cache = Variable(_np.float64(1.0), trainable=False,
                                        name=f"{name}/momentum_cache", dtype="float64")
        self._cache_host = _HostValue()    # no device read per step (see _HostValue)
        self._coef = None

    def _extra_trackables(self):
        return {"momentum_cache": self._momentum_cache}

    def build(self, var_list):
        self._add_slots(var_list, "m", "v")

    def _prepare_step(self, learning_rate):
        t, b1 = self._t, self.beta_1
        mu_t = b1 * (1.0 - 0.5 * 0.96 ** (self.schedule_decay * t))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** (self.schedule_decay * (t + 1)))
        sched_new = self._cache_host.get(self._momentum_cache, float) * mu_t
        self._momentum_cache.assign(_np.float64(sched_new))
        self._cache_host.set(self._momentum_cache, sched_new)
        sched_next = sched_new * mu_next
        self._coef = (1.0 - sched_new, 1.0 - sched_next, 1.0 - self.beta_2 ** t, 1.0 - mu_t,
                      mu_next)

    def update_step(self, gradient, variable, learning_rate):
        slots = self.slots_for(variable)
        variable.update(kernels.nadam, gradient, slots["m"], slots["v"], learning_rate,
                        self.beta_1, self.beta_2, self.epsilon, self._coef,
                        self._decay_factor(variable, learning_rate))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "schedule_decay": self.schedule_decay}


Nadam._elementwise_update = Nadam    # see Optimizer.is_elementwise
