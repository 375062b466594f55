"""``LossScaleOptimizer``: loss scaling for float16 training (``tt.mixed_precision``).

Mirrors ``tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=True,
initial_scale=None, dynamic_growth_steps=None)`` (TF 2.4).

Why: float16 has a narrow exponent range, so the small gradients of a float16 computation
underflow to zero. The loss is multiplied by a large *loss scale* before the backward pass (every
gradient is multiplied by the same factor, which lifts them out of the underflow range) and the
gradients are divided by it again before the update.

The dynamic scale is a ``DynamicLossScale`` (``loss_scale.py``): a step whose gradients hold an
inf or a NaN is skipped and the scale halves (never below 1); after ``dynamic_growth_steps``
finite steps in a row the scale doubles (unless the doubled value overflows float32). A fixed
scale (``dynamic=False``) is a ``FixedLossScale``: it never changes and never skips a step.

What a skipped step leaves alone: every variable, every slot (slots of variables seen for the
first time are not even created) and the inner optimizer's ``iterations`` (TF 2.4 does not call
the inner ``apply_gradients`` on a skipped step, so its counter does not move; Keras 3 and
TF >= 2.5 count skipped steps too -- tnp_train follows TF 2.4).

Where the gradients are combined across replicas: the inner optimizer's one aggregation point
(``gradient_aggregator``, by default ``aggregate_gradients``). ``apply_gradients`` calls it
first, checks the *aggregated* gradients for inf/NaN (so every replica takes the same decision),
then calls the inner ``apply_gradients`` with ``experimental_aggregate_gradients=False``.

State: the dynamic scale's variables, the scale (float32) and the count of finite steps (int64),
are checkpointed as the children ``loss_scale`` and ``good_steps``, next to ``inner_optimizer``
(a fixed scale has no state); the slots are the inner optimizer's, saved and restored through
this object. The state variables live on the host ("cpu") whatever the default device, so
reading the scale never waits for a GPU.
"""
from __future__ import annotations

import math
import numbers

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, device_of as _device_of, is_tnp_array as _is_tnp
from tnp.extend import effect as _effect, is_inexact, tracing as _tracing, wrap

from ..optimizers.base_optimizer import Optimizer, _abandoned_on_failure, hand_over
from .loss_scale import DynamicLossScale, FixedLossScale, LossScale, all_finite as _all_finite
from .loss_scale import deserialize as deserialize_loss_scale

__all__ = ["LossScaleOptimizer", "arguments_from_loss_scale"]

_DEFAULT_INITIAL_SCALE = 2.0 ** 15
_DEFAULT_GROWTH_STEPS = 2000
_MULTIPLIER = 2.0
_F32_MAX = float(_np.finfo(_np.float32).max)


def _each_gradient(grads, fn):
    """``fn`` of each gradient as a tnp array; None entries pass through."""
    return [None if g is None else fn(g if _is_tnp(g) else tnp.asarray(g)) for g in grads]


def arguments_from_loss_scale(loss_scale, who="LossScaleOptimizer"):
    """The ``LossScaleOptimizer`` keyword arguments (``dynamic``, ``initial_scale``,
    ``dynamic_growth_steps``) for a TF 2.4 ``loss_scale``: ``"dynamic"``, a number, a
    ``FixedLossScale``, a ``DynamicLossScale`` (multiplier 2) or a serialized one; TF 2.4's
    TypeError for another ``LossScale``, its ValueError for anything else."""
    if isinstance(loss_scale, dict):
        loss_scale = deserialize_loss_scale(loss_scale, who)
    if isinstance(loss_scale, numbers.Real) and not isinstance(loss_scale, bool):
        return {"dynamic": False, "initial_scale": loss_scale}
    if isinstance(loss_scale, FixedLossScale):
        return {"dynamic": False, "initial_scale": loss_scale.loss_scale_value}
    if isinstance(loss_scale, str) and loss_scale == "dynamic":
        return {}
    if isinstance(loss_scale, DynamicLossScale):
        if loss_scale.multiplier != 2:
            raise ValueError(f'When passing a DynamicLossScale to "loss_scale", '
                             f'DynamicLossScale.multiplier must be 2. Got: {loss_scale!r}')
        return {"initial_scale": loss_scale.initial_loss_scale,
                "dynamic_growth_steps": loss_scale.increment_period}
    if isinstance(loss_scale, LossScale):
        raise TypeError(f"Passing a LossScale that is not a FixedLossScale or a DynamicLossScale "
                        f"is no longer supported. Got: {loss_scale!r}")
    raise ValueError(f'Invalid value passed to loss_scale. loss_scale must be the string '
                     f'"dynamic" (recommended), an int, a float, a FixedLossScale, or a '
                     f'DynamicLossScale. Got value: {loss_scale!r}')


class LossScaleOptimizer(Optimizer):
    """Mirrors ``tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=True,
    initial_scale=None, dynamic_growth_steps=None)`` (TF 2.4).

    * ``dynamic=True``: the scale starts at ``initial_scale`` (default ``2**15``), halves on a
      step with non-finite gradients (the step is skipped, the scale never goes below 1) and
      doubles after ``dynamic_growth_steps`` (default 2000) finite steps in a row.
    * ``dynamic=False``: a fixed scale, ``initial_scale`` (required, at least 1); no step is
      skipped (TF 2.4's ``FixedLossScale``).

    ``minimize(loss, var_list, tape=)`` scales the loss, takes the gradients, unscales them and
    applies them; ``apply_gradients`` takes gradients that are already unscaled (use
    :meth:`get_scaled_loss` and :meth:`get_unscaled_gradients` around your own ``tape.gradient``),
    checks them and skips the step when one is not finite (dynamic scale). ``learning_rate``,
    ``iterations``, slots, weights and the inner optimizer's hyperparameters (``beta_1``,
    ``momentum``, ...) are the inner optimizer's.
    """

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None,
                 dynamic_growth_steps=None):
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError(f"LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                            f"{inner_optimizer!r}")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f'"inner_optimizer" must be an instance of '
                            f'tnp_train.optimizers.Optimizer, but got: {inner_optimizer!r}')
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, '
                            f'but got: {dynamic!r}')
        if dynamic:
            if initial_scale is None:
                initial_scale = _DEFAULT_INITIAL_SCALE
            if dynamic_growth_steps is None:
                dynamic_growth_steps = _DEFAULT_GROWTH_STEPS
            if isinstance(dynamic_growth_steps, bool) or \
                    not isinstance(dynamic_growth_steps, numbers.Integral) or dynamic_growth_steps < 1:
                raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be an integer "
                                 f">= 1, got {dynamic_growth_steps!r}")
            dynamic_growth_steps = int(dynamic_growth_steps)
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, '
                                 f'but got: {dynamic_growth_steps!r}')
        if isinstance(initial_scale, bool) or not isinstance(initial_scale, numbers.Real) or \
                not math.isfinite(initial_scale) or initial_scale <= 0 or initial_scale > _F32_MAX:
            raise ValueError(f"LossScaleOptimizer: initial_scale must be a finite positive number "
                             f"(float32), got {initial_scale!r}")
        if not dynamic and initial_scale < 1:
            raise ValueError(f"LossScaleOptimizer: a fixed initial_scale must be at least 1, got "
                             f"{initial_scale!r}")
        d = self.__dict__
        d["_inner"] = inner_optimizer
        d["_name"] = "LossScaleOptimizer"
        d["_dynamic"] = dynamic
        d["_initial_scale"] = float(initial_scale)
        d["_growth_steps"] = dynamic_growth_steps
        # the loss scale itself (TF 2.4's classes); a dynamic one's variables are this
        # optimizer's checkpointed state
        if dynamic:
            state = DynamicLossScale(initial_scale, dynamic_growth_steps, _MULTIPLIER)
            d["_loss_scale"] = state._current_loss_scale
            d["_good_steps"] = state._num_good_steps
        else:
            state = FixedLossScale(initial_scale)
        d["_loss_scale_state"] = state

    # ================================================================ attribute delegation
    def __getattr__(self, name):
        # only reached when normal lookup fails: the inner optimizer's public attributes
        # (hyperparameters such as beta_1, momentum, clipnorm, weight_decay...)
        inner = self.__dict__.get("_inner")
        if inner is None or name.startswith("_"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(inner, name)

    def __setattr__(self, name, value):
        inner = self.__dict__.get("_inner")
        if inner is not None and not name.startswith("_") and not hasattr(type(self), name) \
                and name not in self.__dict__ and hasattr(inner, name):
            setattr(inner, name, value)     # a hyperparameter of the inner optimizer
        else:
            object.__setattr__(self, name, value)

    # ================================================================ loss-scale API
    @property
    def inner_optimizer(self):
        """The optimizer this one wraps."""
        return self._inner

    @property
    def dynamic(self):
        """Whether the loss scale is updated dynamically."""
        return self._dynamic

    @property
    def loss_scale(self):
        """The current loss scale, a float32 scalar (a snapshot of the state variable)."""
        return self._loss_scale_state()

    @property
    def dynamic_counter(self):
        """Finite steps since the scale last changed (int64 scalar); None for a fixed scale."""
        return self._good_steps.value() if self._dynamic else None

    @property
    def initial_scale(self):
        """The scale the optimizer was created with (a float)."""
        return self._initial_scale

    @property
    def dynamic_growth_steps(self):
        """Finite steps in a row after which the scale doubles; None for a fixed scale."""
        return self._growth_steps

    def _scale(self):
        # a host variable ("cpu"): reading it never waits for a device
        return self._loss_scale_state._value()

    def get_scaled_loss(self, loss):
        """``loss * loss_scale`` (recorded on the tapes following ``loss``); a callable
        ``loss`` gives a callable. The scale is cast to the loss's dtype, as TF 2.4 does."""
        if callable(loss) and not (_is_tnp(loss) or isinstance(loss, _np.ndarray)):
            def scaled():
                return self.get_scaled_loss(loss())
            return scaled
        if not _is_tnp(loss):
            loss = tnp.asarray(loss)
        if _tracing() and is_inexact(loss.dtype):
            # a compiled step: the scale read from its variable at every run
            return loss * self._loss_scale_state._value_array().astype(loss.dtype)
        return loss * tnp.asarray(self._scale(), dtype=loss.dtype, device=_device_of(loss)) \
            if is_inexact(loss.dtype) else loss * self._scale()

    def get_unscaled_gradients(self, grads):
        """Each gradient divided by the loss scale (multiplied by its reciprocal, in the
        gradient's dtype); None entries pass through. Differentiable (tnp operations)."""
        if _tracing():
            return self._unscale_traced(grads)
        recip = 1.0 / self._scale()
        return _each_gradient(
            grads, lambda g: g * tnp.asarray(recip, dtype=g.dtype, device=_device_of(g)))

    def _unscale_traced(self, grads):
        """The unscaling while a compiled step is traced: the reciprocal of the scale read at
        every run, in float64 and then in each gradient's dtype, as an eager step computes it."""
        recip = 1.0 / self._loss_scale_state._value_array()
        return _each_gradient(
            grads, lambda g: g * recip.astype(g.dtype) if is_inexact(g.dtype) else g * recip)

    def _unscale_fast(self, grads):
        """:meth:`get_unscaled_gradients` on the backend arrays (not recorded): minimize's path."""
        if _tracing():
            return self._unscale_traced(grads)
        recip = 1.0 / self._scale()

        def unscale(g):
            a = _backend(g)
            return wrap(a * a.dtype.type(recip), _device_of(g)) if is_inexact(a.dtype) \
                else g * recip
        return _each_gradient(grads, unscale)

    def _update_scale(self, finite):
        """The dynamic scale's state machine (``DynamicLossScale``), for the decision taken on
        the aggregated gradients (the same on every replica, so no flag is reduced again)."""
        if self._dynamic:
            self._loss_scale_state._update_with(finite)

    # ================================================================ the update
    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Mirrors ``LossScaleOptimizer.apply_gradients(grads_and_vars, name=None,
        experimental_aggregate_gradients=True)`` (TF 2.4): the gradients are already unscaled.
        Aggregates them (the inner optimizer's aggregator), then, with a dynamic scale, skips
        the step if one is not finite and updates the scale. Returns the inner ``iterations``.
        In a function being compiled, an effect of each call (see ``Optimizer.apply_gradients``)."""
        if _tracing():
            _effect(self._apply_gradients_now, list(grads_and_vars), name,
                    experimental_aggregate_gradients)
            return self._inner.iterations
        return self._apply_gradients_now(grads_and_vars, name, experimental_aggregate_gradients)

    def _apply_gradients_now(self, grads_and_vars, name, experimental_aggregate_gradients):
        inner = self._inner
        pairs = self._inner._validated_pairs(grads_and_vars, who=self._name)
        if experimental_aggregate_gradients:
            pairs = list(inner.gradient_aggregator(pairs))
        if self._dynamic:
            finite = _all_finite([_backend(g) if _is_tnp(g) else _np.asarray(g)
                                  for g, _ in pairs if g is not None])
        else:
            finite = True
        if finite:
            inner.apply_gradients(pairs, name=name, experimental_aggregate_gradients=False)
        self._update_scale(finite)
        return inner.iterations

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Mirrors ``Optimizer.minimize(loss, var_list, grad_loss=None, name=None, tape=None)``:
        ``loss`` (a value recorded on ``tape``, or a no-argument callable) is scaled, the
        gradients of the scaled loss are taken and unscaled, then :meth:`apply_gradients`."""
        scaled, var_list, tape = self._recorded_loss(loss, var_list, tape,
                                                     then=self.get_scaled_loss)
        ready = getattr(self._inner.gradient_aggregator, "gradient_ready", None)
        if ready is None:
            grads = tape.gradient(scaled, var_list, output_gradients=grad_loss)
            grads = self._unscale_fast(grads)
        else:
            # the aggregator sees each gradient unscaled, as apply_gradients will
            unscaled = {}
            ready = hand_over(ready)

            def unscale_then_hand_over(v, g):
                ug = self._unscale_fast([g])[0]
                unscaled[id(v)] = ug
                ready(v, ug)

            with _abandoned_on_failure(self._inner.gradient_aggregator):
                tape.gradient(scaled, var_list, output_gradients=grad_loss,
                              gradient_ready=unscale_then_hand_over)
            grads = [unscaled[id(v)] for v in var_list]
        return self.apply_gradients(zip(grads, var_list), name=name)

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError("LossScaleOptimizer updates through its inner optimizer")

    def aggregate_gradients(self, grads_and_vars):
        return self._inner.aggregate_gradients(grads_and_vars)

    # ================================================================ delegated state
    @property
    def learning_rate(self):
        """The inner optimizer's learning rate (settable)."""
        return self._inner.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._inner.learning_rate = value

    lr = learning_rate

    @property
    def iterations(self):
        """The inner optimizer's step counter (not incremented by a skipped step)."""
        return self._inner.iterations

    @iterations.setter
    def iterations(self, value):
        self._inner.iterations = value

    def add_slot(self, var, slot_name, initializer="zeros", shape=None):
        return self._inner.add_slot(var, slot_name, initializer=initializer, shape=shape)

    def get_slot(self, var, slot_name):
        return self._inner.get_slot(var, slot_name)

    def get_slot_names(self):
        return self._inner.get_slot_names()

    def variables(self):
        """The inner optimizer's variables (as TF 2.4; the loss-scale state is checkpointed
        through :meth:`_trackable_children`, not listed here)."""
        return self._inner.variables()

    @property
    def weights(self):
        return self._inner.weights

    def get_weights(self):
        return self._inner.get_weights()

    def set_weights(self, weights):
        return self._inner.set_weights(weights)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        return self._inner.exclude_from_weight_decay(var_list=var_list, var_names=var_names)

    # ================================================================ checkpoint hooks
    def _trackable_children(self):
        if not self._dynamic:       # a fixed scale is configuration, not state (as TF 2.4)
            return {"inner_optimizer": self._inner}
        return {"inner_optimizer": self._inner, "loss_scale": self._loss_scale,
                "good_steps": self._good_steps}

    def _slot_variables(self):
        return self._inner._slot_variables()

    def _restore_slot(self, variable, slot_name, value):
        return self._inner._restore_slot(variable, slot_name, value)

    # ================================================================ config
    def get_config(self):
        """TF 2.4's config: the serialized inner optimizer and the loss-scale arguments."""
        from .. import optimizers as _optimizers
        return {"inner_optimizer": _optimizers.serialize(self._inner), "dynamic": self._dynamic,
                "initial_scale": self._initial_scale,
                "dynamic_growth_steps": self._growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .. import optimizers as _optimizers
        config = dict(config)
        if "loss_scale" in config:
            # TF 2.3's config (``optimizer``, ``loss_scale``: a serialized loss scale), read as
            # TF 2.4 reads it
            config.update(arguments_from_loss_scale(config.pop("loss_scale"),
                                                    "LossScaleOptimizer.from_config"))
            config["inner_optimizer"] = config.pop("optimizer")
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = _optimizers.deserialize(inner, custom_objects=custom_objects)
        return cls(inner, **config)

    def __repr__(self):
        return (f"<tt.mixed_precision.LossScaleOptimizer of {self._inner!r}, "
                f"{'dynamic' if self._dynamic else 'fixed'} scale {self._scale():g}>")
