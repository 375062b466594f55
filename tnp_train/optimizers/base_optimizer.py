"""``Optimizer``: the one base class of tnp_train's optimizers (TF 2.4's ``OptimizerV2`` API).

The base class owns ``apply_gradients``/``minimize``, the iteration count, gradient clipping and
slot variables; a subclass writes only ``build`` (its slots) and ``update_step``. Gradients pass
through :meth:`aggregate_gradients` before anything else: the one place where a distribution
strategy combines the replicas' gradients (identity in a single process).
"""
from __future__ import annotations

import tnp

from ..autodiff import GradientTape, Variable

__all__ = ["Optimizer"]


class Optimizer:
    """Mirrors ``tf.keras.optimizers.Optimizer(name, clipnorm=None, clipvalue=None)``."""

    def __init__(self, name, learning_rate=0.01, clipnorm=None, clipvalue=None, **kwargs):
        if kwargs:
            raise TypeError(f"{name}: unexpected keyword arguments {sorted(kwargs)}")
        if clipnorm is not None and clipvalue is not None:
            raise ValueError(f"{name}: give clipnorm or clipvalue, not both")
        self._name = name
        self.learning_rate = learning_rate
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.iterations = Variable(0, trainable=False, name=f"{name}/iter", dtype="int64")
        self._slots = {}          # variable ref -> {slot name: Variable}
        self._built_for = set()

    # ------------------------------------------------------------------ slots
    def add_slot(self, var, slot_name, initializer="zeros"):
        """A non-trainable Variable shaped like ``var``, kept per variable (momentum, ...)."""
        slots = self._slots.setdefault(var.ref(), {})
        if slot_name not in slots:
            init = tnp.zeros(var.shape, dtype=var.dtype) if initializer == "zeros" else \
                tnp.asarray(initializer(var.shape, dtype=var.dtype))
            slots[slot_name] = Variable(init, trainable=False, name=f"{var.name}/{slot_name}")
        return slots[slot_name]

    def get_slot(self, var, slot_name):
        return self._slots[var.ref()][slot_name]

    def get_slot_names(self):
        names = []
        for s in self._slots.values():
            names.extend(n for n in s if n not in names)
        return names

    def build(self, var_list):
        """Create the slots for ``var_list`` (subclasses override; called once per variable)."""

    # ------------------------------------------------------------------ the update
    def _lr(self):
        lr = self.learning_rate
        return lr(self.iterations.numpy().item()) if callable(lr) else lr

    def aggregate_gradients(self, grads_and_vars):
        """Combine gradients across replicas (a strategy replaces this); identity here."""
        return grads_and_vars

    def _clip(self, grads):
        if self.clipvalue is not None:
            grads = [tnp.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        if self.clipnorm is not None:
            out = []
            for g in grads:
                n = float(tnp.sqrt(tnp.sum(g * g)))
                out.append(g * (self.clipnorm / n) if n > self.clipnorm else g)
            grads = out
        return grads

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Update each variable with its gradient; pairs whose gradient is None are skipped (as
        TF does, with a warning if every gradient is None). Returns the iteration count."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError(f"{self._name}.apply_gradients: no (gradient, variable) pairs")
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"{self._name}.apply_gradients: expected tt.Variable, got "
                                f"{type(v).__name__}")
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise ValueError(f"{self._name}.apply_gradients: no gradients provided for any variable")
        if experimental_aggregate_gradients:
            pairs = self.aggregate_gradients(pairs)
        grads = self._clip([g if isinstance(g, tnp.ndarray) else tnp.asarray(g) for g, _ in pairs])
        variables = [v for _, v in pairs]
        new = [v for v in variables if v.ref() not in self._built_for]
        if new:
            self.build(new)
            self._built_for.update(v.ref() for v in new)
        lr = self._lr()
        for g, v in zip(grads, variables):
            if g.shape != v.shape:
                raise ValueError(f"{self._name}: gradient of shape {g.shape} for variable "
                                 f"{v.name} of shape {v.shape}")
            self.update_step(g, v, lr)
        self.iterations.assign_add(1)
        return self.iterations

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError(f"{type(self).__name__} must implement update_step")

    def minimize(self, loss, var_list, tape=None):
        """Compute gradients of ``loss`` (a value recorded on ``tape``, or a callable) and apply
        them; mirrors ``Optimizer.minimize``."""
        var_list = list(var_list() if callable(var_list) and not isinstance(var_list, Variable) else var_list)
        if tape is None:
            if not callable(loss):
                raise ValueError(f"{self._name}.minimize: `tape` is required when `loss` is a "
                                 f"value rather than a callable")
            with GradientTape() as tape:
                loss = loss()
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def get_config(self):
        return {"name": self._name, "learning_rate": self.learning_rate,
                "clipnorm": self.clipnorm, "clipvalue": self.clipvalue}
