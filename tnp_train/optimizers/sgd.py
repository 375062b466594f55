"""SGD with momentum (``tf.keras.optimizers.SGD``)."""
from __future__ import annotations

from tnp.extend import backend_update as _backend_update

from ..autodiff import Variable
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

    def traced_update_steps(self, todo, learning_rate, step):
        """All the variables' updates of a compiled step as ONE node of the program: the
        eager kernels (``kernels.sgd_many``) on the run's arrays, the variables and slots
        written in place (see :meth:`Optimizer._apply_traced`). ``backend_update`` is, in a
        compiled program, what ``Variable.update`` is eagerly: the one door of the writes
        (declared, versions bumped), taken only for variables whose ``update`` is the base
        one."""
        ws = [v for _, v in todo]
        if type(self).traced_update_step is not SGD.traced_update_step or \
                any(type(v).update is not Variable.update for v in ws):
            # a subclass's own traced rule, or a variable whose writes go elsewhere (a
            # distributed one's update): per variable, in tnp operations
            for g, v in todo:
                self.traced_update_step(g, v, learning_rate, step)
            return
        ms = [self.slots_for(v)["momentum"] for v in ws] if self.momentum else None
        # the dtypes and shapes a run will see are these (_apply_traced checked the
        # gradients'): said once here, not checked at every run
        dt = ws[0].dtype
        checked = dt in kernels.FUSED_DTYPES and all(
            v.dtype == dt and v.ndim > 0 for v in ws) and \
            all(m.dtype == dt and m.shape == v.shape for m, v in zip(ms or (), ws))
        _backend_update(kernels.sgd_many, (ws, [g for g, _ in todo], ms, learning_rate,
                                           self.momentum, self.nesterov, checked),
                        writes=ws + (ms or []))

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


SGD._elementwise_update = SGD    # see Optimizer.is_elementwise
