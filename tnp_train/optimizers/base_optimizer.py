"""``Optimizer``: the one base class of tnp_train's optimizers (TF 2.4's ``OptimizerV2`` API,
with Keras 3's decoupled ``weight_decay`` and settable ``learning_rate``).

The base class owns ``apply_gradients``/``minimize``, the iteration count, the learning rate
(float or schedule), gradient aggregation, clipping and transformers, decoupled weight decay,
slot variables, configs and the checkpoint hooks. A subclass writes only ``build(var_list)``
(its slots, with :meth:`Optimizer.add_slot`) and ``update_step(gradient, variable,
learning_rate)``.

What ``apply_gradients`` does, in order (TF 2.4's order):

1. drop pairs whose gradient is None; check the variables are ``tt.Variable``; cast each
   gradient to its variable's dtype (float16 gradients under mixed precision) and check shapes;
2. ``gradient_aggregator(pairs)`` (default :meth:`aggregate_gradients`, the identity in one
   process: THE place where a distribution strategy combines the replicas' gradients), unless
   ``experimental_aggregate_gradients=False``. A :class:`~.gradient_aggregator.GradientAggregator`
   also sees each gradient the moment it is final: :meth:`minimize` (and so ``fit``) passes its
   ``gradient_ready`` to ``tape.gradient(..., gradient_ready=)``, so it can start reducing the
   last layers' gradients while the backward pass goes on, and only waits for the results when
   its ``reduce`` is called with all the pairs;
3. ``clipvalue``, then ``clipnorm`` (per gradient), then ``global_clipnorm``, then each of
   ``gradient_transformers`` (callables on the list of pairs);
4. create the slots of variables seen for the first time (``build``);
5. per variable: decoupled weight decay ``w -= lr * weight_decay * w`` (fused into the update
   kernel by the built-in optimizers), ``update_step``, the variable's constraint;
6. ``iterations += 1``.

The learning rate used by a step is evaluated once, before the updates, at the current
``iterations`` (a schedule gets the number of steps already taken).

Every write goes through the variable: an update step hands its kernel to
``variable.update(kernel, gradient, *slots, ...)`` (which applies the variable's constraint once,
after the kernel), the step count is incremented with ``iterations.update``, so a distributed
variable (made by a strategy's variable creator) sees every update. Slots are made with
``tt.Variable`` (so the creators see them too), once, under the optimizer's lock: replicas
running in threads may build the same optimizer at once.

The step count and the learning rate are kept on the host as well (:class:`_HostValue`), so a
step reads neither back from its device; they are read again only after someone else wrote the
variable (a checkpoint restore, a callback assigning the rate), which its version counter shows.
"""
from __future__ import annotations

import contextlib
import numbers
import sys
import threading

import numpy as _np

import tnp
from tnp.extend import (
    array_module as _xp_of, backend_array as _backend, device_of as _device_of,
    effect as _effect, is_tnp_array as _is_tnp, tracing as _in_trace, version as _version, wrap)

from ..autodiff import GradientTape, Variable
from ..utils import tracing as _tracing
from . import schedules as _schedules
from .gradient_aggregator import as_gradient_aggregator

__all__ = ["Optimizer", "VariablePart"]


def _check_nonneg(owner, what, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {what} must be a number or None, got {type(value).__name__}")
    if not value >= 0:
        raise ValueError(f"{owner}: {what} must be >= 0, got {value}")
    return float(value)


class _HostValue:
    """A Python copy of a scalar Variable's value, valid while the variable still holds the
    buffer it was taken from and that buffer's version has not moved since (a write through the
    variable bumps it). Saves a device-to-host read on every step."""

    __slots__ = ("_var", "_array", "_seen", "_value")

    def __init__(self):
        self._var = self._array = self._value = None
        self._seen = -1

    def get(self, var, convert):
        """The value of ``var`` (``convert`` applied to its backend array when it must be read)."""
        a = _backend(var)
        if var is self._var and a is self._array and _version(a) == self._seen:
            return self._value
        value = convert(a)
        self.set(var, value)
        return value

    def set(self, var, value):
        """Record ``value`` as the value ``var`` holds now (after the caller wrote it)."""
        a = _backend(var)
        self._var, self._array, self._seen, self._value = var, a, _version(a), value


def _increment(a):
    a += 1


class VariablePart(Variable):
    """A Variable over part of another one's buffer: ``whole``, the variable it is part of, and
    ``part_slots``, the same parts of that variable's slots (slot name -> VariablePart). An
    optimizer updates it as it would ``whole`` (the same weight-decay choice), reading
    ``part_slots`` as its slots (:meth:`Optimizer.slots_for`): for an
    :attr:`~Optimizer.is_elementwise` optimizer, ``update_step(gradient_part, part, lr)``
    updates that part of the variable and of its slots exactly as the whole step would. Made
    by whoever owns the buffer (the sharded update of a strategy), without the variable
    creators: it is a view of state that exists, not a new variable."""

    __slots__ = ("whole", "part_slots")


def _decay_in_place(w, d):
    w -= d * w


def hand_over(ready):
    """``ready`` (an aggregator's ``gradient_ready``) as the tape's ``gradient_ready`` callback:
    itself, or, while a compiled step is being traced, a recorder of an effect of the compiled
    function, so the hand-over happens at every run with that run's gradient, where the
    backward pass makes it final (a bucket's all-reduce still starts during the backward)."""
    if not _in_trace():
        return ready

    def ready_at_every_run(variable, gradient):
        _effect(ready, variable, gradient)
    return ready_at_every_run


@contextlib.contextmanager
def _abandoned_on_failure(aggregator):
    """A backward pass handing gradients over to ``aggregator`` (a ``gradient_aggregator``,
    None for none) runs inside: if it fails, the aggregator forgets the step (``abandon``), so
    no half-handed-over gradient stays in it for the next step."""
    try:
        yield
    except BaseException:
        if aggregator is not None:
            as_gradient_aggregator(aggregator).abandon()
        raise


class Optimizer:
    """Mirrors ``tf.keras.optimizers.Optimizer(name, gradient_aggregator=None,
    gradient_transformers=None, **kwargs)`` (TF 2.4), the keyword arguments being
    ``learning_rate`` (float, ``LearningRateSchedule`` or a no-argument callable; ``lr`` is an
    alias), ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay`` (TF 2.4's inverse-time
    decay of the learning rate, ``lr / (1 + decay * iterations)``) and Keras 3's
    ``weight_decay`` (decoupled: ``w -= lr * weight_decay * w`` before each update).

    Subclasses implement ``build(var_list)`` (called once for the variables seen for the first
    time; create slots with :meth:`add_slot`) and ``update_step(gradient, variable,
    learning_rate)`` (``gradient`` a tnp array of the variable's dtype and shape; update the
    variable through it: ``variable.update(fn, gradient, *slots, ...)`` or ``assign*``, which
    apply its constraint). A subclass whose update already applies the weight decay (by passing
    :meth:`_decay_factor` to a kernel) sets ``_fuses_weight_decay = True``.
    """

    _fuses_weight_decay = False

    def __init__(self, name, learning_rate=0.001, gradient_aggregator=None,
                 gradient_transformers=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 weight_decay=None, **kwargs):
        if "lr" in kwargs:  # TF 2.4's deprecated alias
            learning_rate = kwargs.pop("lr")
        decay = kwargs.pop("decay", 0.0)
        if kwargs:
            raise TypeError(f"{name}: unexpected keyword arguments {sorted(kwargs)}")
        self._name = name
        self.clipnorm = _check_nonneg(name, "clipnorm", clipnorm)
        self.clipvalue = _check_nonneg(name, "clipvalue", clipvalue)
        self.global_clipnorm = _check_nonneg(name, "global_clipnorm", global_clipnorm)
        if self.clipnorm is not None and self.global_clipnorm is not None:
            raise ValueError(f"{name}: cannot accept both `clipnorm` and `global_clipnorm` "
                             f"(got {clipnorm} and {global_clipnorm})")
        self.weight_decay = _check_nonneg(name, "weight_decay", weight_decay)
        self._initial_decay = _check_nonneg(name, "decay", decay)
        if gradient_aggregator is not None and not callable(gradient_aggregator):
            raise TypeError(f"{name}: gradient_aggregator must be callable, got "
                            f"{type(gradient_aggregator).__name__}")
        self.gradient_aggregator = gradient_aggregator if gradient_aggregator is not None \
            else self.aggregate_gradients
        self._aggregator = None    # (gradient_aggregator, it as a GradientAggregator)
        transformers = list(gradient_transformers or [])
        for t in transformers:
            if not callable(t):
                raise TypeError(f"{name}: gradient_transformers must be callables, got "
                                f"{type(t).__name__}")
        self.gradient_transformers = transformers
        self._build_lock = threading.RLock()   # slots are made once, whatever thread asks first
        self._iter_host = _HostValue()
        self._lr_host = _HostValue()
        self.iterations = Variable(_np.int64(0), trainable=False, name=f"{name}/iter", dtype="int64")
        self._lr_var = None        # float32 Variable holding a float learning rate
        self._lr_float = None      # the exact float given (the Variable holds it rounded)
        self._lr_float_f32 = None
        self._lr_fn = None         # a schedule or a no-argument callable
        self._set_learning_rate(learning_rate)
        self._slots = {}           # variable key -> (variable, {slot name: Variable})
        self._slot_order = []      # (variable, slot name, slot) in creation order
        self._slot_names = []
        self._built_uids = set()   # the keys of the variables built
        self._deferred_slots = {}  # (variable ref, slot name) -> value, see _restore_slot
        self._wd_exclude_ids = set()
        self._wd_exclude_names = ()
        self._t = 1                # the 1-based number of the step being applied

    # ================================================================ properties
    @property
    def name(self):
        return self._name

    def _set_learning_rate(self, value):
        if isinstance(value, _schedules.LearningRateSchedule) or (
                callable(value) and not (_is_tnp(value) or isinstance(value, _np.ndarray))):
            self._lr_fn = value
            return
        if _is_tnp(value) or isinstance(value, _np.ndarray):
            if _np.ndim(value) != 0:
                raise ValueError(f"{self._name}: the learning rate must be a scalar, got shape "
                                 f"{_np.shape(value)}")
            value = float(_np.asarray(_backend(value) if _is_tnp(value) else value))
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{self._name}: learning_rate must be a float, a "
                            f"LearningRateSchedule or a callable, got {type(value).__name__}")
        if self._lr_fn is not None:
            raise TypeError(f"{self._name}: this optimizer was created with a learning-rate "
                            f"schedule or callable ({self._lr_fn!r}); it cannot be set to a float")
        value = float(value)
        if self._lr_var is None:
            self._lr_var = Variable(_np.float32(value), trainable=False,
                                    name=f"{self._name}/learning_rate", dtype="float32")
        else:
            self._lr_var.assign(_np.float32(value))
        self._lr_float = value
        self._lr_float_f32 = float(_np.float32(value))
        self._lr_host.set(self._lr_var, self._lr_float_f32)

    @property
    def learning_rate(self):
        """The learning rate: the float32 Variable holding a float rate (``float()`` of it is the
        value), or a schedule's value at the current ``iterations``. Settable with a float, or
        with a schedule (a TypeError when the optimizer was built with a schedule and a float
        is given, as Keras 3)."""
        if self._lr_fn is None:
            return self._lr_var
        if isinstance(self._lr_fn, _schedules.LearningRateSchedule):
            return self._lr_fn(self.iterations)
        return tnp.asarray(_np.float32(float(_np.asarray(self._lr_fn()))))

    @learning_rate.setter
    def learning_rate(self, value):
        self._set_learning_rate(value)

    lr = learning_rate

    def _steps_taken(self):
        """``iterations`` as a Python int (read from the variable only when someone else wrote
        it since this optimizer did)."""
        return self._iter_host.get(self.iterations, int)

    def _base_lr(self):
        """The learning rate before ``decay``, as a Python float."""
        if self._lr_fn is None:
            v = self._lr_host.get(self._lr_var, float)
            # the Variable holds float32(rate): while it still does, use the exact rate given;
            # a restored or assigned value is used as it is
            return self._lr_float if v == self._lr_float_f32 else v
        if isinstance(self._lr_fn, _schedules.LearningRateSchedule):
            # from the host-side step count: no device array is made or read per step
            return self._lr_fn._host_rate(self._steps_taken())
        return float(_np.asarray(self._lr_fn()))

    def _current_learning_rate(self):
        """The learning rate of the step about to be applied (schedule and ``decay`` included)."""
        lr = self._base_lr()
        if self._initial_decay:
            lr = lr / (1.0 + self._initial_decay * float(self._steps_taken()))
        return lr

    # ================================================================ slots
    def _add_slots(self, var_list, *slot_names):
        """Zero slots ``slot_names`` for every variable of ``var_list``: each name for all the
        variables before the next name (Keras's creation order, which checkpoints keep)."""
        for name in slot_names:
            for v in var_list:
                self.add_slot(v, name)

    def add_slot(self, var, slot_name, initializer="zeros", shape=None):
        """A non-trainable Variable kept per variable (momentum, ...), in ``var``'s dtype and on
        its device; created once (later calls return it, from any thread). ``initializer`` is a
        name ("zeros", "ones"), a number (constant), a callable ``(shape, dtype)`` or an array."""
        with self._build_lock:
            return self._add_slot(var, slot_name, initializer, shape)

    def _add_slot(self, var, slot_name, initializer, shape):
        entry = self._slots.get(var.key)
        if entry is None:
            entry = self._slots[var.key] = (var, {})
        slots = entry[1]
        if slot_name in slots:
            return slots[slot_name]
        shape = tuple(var.shape) if shape is None else tuple(shape)
        dtype = var.dtype
        if isinstance(initializer, str):
            from .. import initializers as _init

            init = _init.get(initializer)(shape, dtype=dtype)
        elif isinstance(initializer, numbers.Number):
            init = _np.full(shape, initializer, dtype=dtype)
        elif callable(initializer):
            init = initializer(shape, dtype=dtype)
        else:
            init = initializer
        slot = Variable(init, trainable=False, name=f"{var.name}/{slot_name}", dtype=dtype,
                        device=_device_of(var))
        if tuple(slot.shape) != shape:
            raise ValueError(f"{self._name}.add_slot: initial value of slot '{slot_name}' for "
                             f"'{var.name}' has shape {tuple(slot.shape)}, expected {shape}")
        pending = self._deferred_slots.pop((var.ref(), slot_name), None)
        if pending is not None:
            self._assign_slot(slot, pending, var, slot_name)
        slots[slot_name] = slot
        self._slot_order.append((var, slot_name, slot))
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        return slot

    def get_slot(self, var, slot_name):
        """The slot ``slot_name`` of ``var`` (KeyError if it does not exist)."""
        entry = self._slots.get(var.key)
        if entry is None or slot_name not in entry[1]:
            raise KeyError(f"{self._name}: no slot '{slot_name}' for variable '{var.name}' "
                           f"(slots exist once the variable has been updated; names: "
                           f"{self.get_slot_names()})")
        return entry[1][slot_name]

    def get_slot_names(self):
        """The names of the slots created so far, in creation order."""
        return list(self._slot_names)

    def slots_for(self, variable):
        """``{slot name: slot Variable}`` of ``variable`` (empty before its slots are made, and
        for an optimizer without slots); for a :class:`VariablePart`, the parts of its
        variable's slots. What ``update_step`` reads; the dict is the optimizer's, not to be changed."""
        entry = self._slots.get(variable.key)
        if entry is not None:
            return entry[1]
        if type(variable) is VariablePart:
            return variable.part_slots
        return {}

    def is_built(self, variable):
        """Whether ``build`` has run for ``variable`` (its slots, if any, exist)."""
        return variable.key in self._built_uids

    def ensure_built(self, var_list):
        """``build`` the variables of ``var_list`` not built yet, once each, whichever thread
        comes first (what the first ``apply_gradients`` of a variable does)."""
        self._build_new(var_list)

    def build(self, var_list):
        """Create the slots for ``var_list``, the variables seen for the first time (override)."""

    # ================================================================ checkpoint hooks
    def _trackable_children(self):
        """name -> Variable (or trackable) of the optimizer's own state, for checkpoints."""
        out = {"iter": self.iterations}
        if self._lr_var is not None and self._lr_fn is None:
            out["learning_rate"] = self._lr_var
        out.update(self._extra_trackables())
        return out

    def _extra_trackables(self):
        """More non-slot state of a subclass (Nadam's momentum cache), name -> Variable."""
        return {}

    def _slot_variables(self):
        """(variable, slot name, slot variable) for every slot created so far, in creation
        order: Keras's (``_add_slots`` makes each slot name for every variable before the
        next name: m of every variable, then v), so weight lists line up with Keras's."""
        return list(self._slot_order)

    def _assign_slot(self, slot, value, var, slot_name):
        a = _np.asarray(value.numpy() if isinstance(value, Variable) else
                        (_backend(value) if _is_tnp(value) else value))
        if a.shape != tuple(slot.shape):
            raise ValueError(f"{self._name}: cannot restore slot '{slot_name}' of variable "
                             f"'{var.name}': value of shape {a.shape}, slot of shape "
                             f"{tuple(slot.shape)}")
        dev = _device_of(slot)
        a = a.astype(slot.dtype, copy=False)
        slot.assign(wrap(_xp_of(dev).asarray(a), dev) if dev.is_gpu else a)

    def _restore_slot(self, variable, slot_name, value):
        """Restore a slot from a checkpoint: assigned now if the slot exists, else kept and
        assigned when :meth:`add_slot` creates it (deferred restoration)."""
        with self._build_lock:   # not between add_slot's check and its creation
            entry = self._slots.get(variable.key)
            if entry is not None and slot_name in entry[1]:
                self._assign_slot(entry[1][slot_name], value, variable, slot_name)
            else:
                self._deferred_slots[(variable.ref(), slot_name)] = value

    # ================================================================ variables
    def variables(self):
        """The optimizer's variables: iterations, the learning-rate variable, other state, then
        the slots in creation order (``Optimizer.variables()``)."""
        out = list(self._trackable_children().values())
        out.extend(s for _, _, s in self._slot_variables())
        return out

    @property
    def weights(self):
        return self.variables()

    def get_weights(self):
        return [v.numpy() for v in self.variables()]

    def set_weights(self, weights):
        vs = self.variables()
        weights = list(weights)
        if len(weights) != len(vs):
            raise ValueError(f"{self._name}.set_weights: {len(weights)} arrays for "
                             f"{len(vs)} optimizer variables")
        for v, w in zip(vs, weights):
            if _np.shape(w) != tuple(v.shape):
                raise ValueError(f"{self._name}.set_weights: shape {_np.shape(w)} for variable "
                                 f"'{v.name}' of shape {tuple(v.shape)}")
            v.assign(_np.asarray(w, dtype=v.dtype))

    # ================================================================ weight decay
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Variables (or variables whose name contains one of ``var_names``) that weight decay
        skips (Keras 3). Call before the first update."""
        self._wd_exclude_ids.update(v.key for v in (var_list or []))
        self._wd_exclude_names = tuple(self._wd_exclude_names) + tuple(var_names or ())

    def _decay_factor(self, variable, learning_rate):
        """``learning_rate * weight_decay`` for ``variable`` (0.0 when it is excluded)."""
        wd = self.weight_decay
        if not wd:
            return 0.0
        if self._wd_exclude_ids or self._wd_exclude_names:
            if type(variable) is VariablePart:
                variable = variable.whole     # a part is decayed as its variable
            if variable.key in self._wd_exclude_ids or any(
                    n in variable.name for n in self._wd_exclude_names):
                return 0.0
        return learning_rate * wd

    # ================================================================ gradients
    @property
    def aggregator(self):
        """``gradient_aggregator`` as a :class:`~.gradient_aggregator.GradientAggregator`
        (itself, or an adapter of a plain callable), made again only when
        ``gradient_aggregator`` is set to another object."""
        given = self.gradient_aggregator
        cached = self._aggregator
        if cached is None or cached[0] is not given:
            cached = self._aggregator = (given, as_gradient_aggregator(given))
        return cached[1]

    def aggregate_gradients(self, grads_and_vars):
        """Combine gradients across replicas (TF 2.4's ``all_reduce_sum_gradients``): the
        identity in one process; summed over the replicas when applied in a replica function
        of a strategy of several (``compile`` under a strategy installs its aggregator)."""
        # distribute sits above the optimizers: asked only once a strategy module is loaded
        ds = sys.modules.get("tnp_train.distribute.distribute_lib")
        if ds is not None:
            return ds.aggregate_gradients(self, grads_and_vars)
        return grads_and_vars

    def _gradient(self, g, v):
        """``g`` as a tnp array of ``v``'s dtype, shape and device (ValueError on mismatch)."""
        vdev = _device_of(v)
        if _is_tnp(g):
            if _device_of(g) is not vdev:
                raise ValueError(f"{self._name}: gradient on device {_device_of(g)} for variable "
                                 f"'{v.name}' on {vdev}")
            a = _backend(g)
        else:
            a = _np.asarray(g)
            if vdev.is_gpu:
                a = _xp_of(vdev).asarray(a)
        va = _backend(v)
        if a is va:                  # the variable passed as its own gradient
            a = a.copy()
        if a.shape != va.shape:
            raise ValueError(f"{self._name}: gradient of shape {tuple(a.shape)} for variable "
                             f"'{v.name}' of shape {tuple(va.shape)}")
        if a.dtype != va.dtype:
            a = a.astype(va.dtype)
        elif type(g) is tnp.ndarray:
            return g
        return wrap(a, vdev)

    def _transform_gradients(self, pairs):
        """clipvalue, clipnorm, global_clipnorm, then the gradient transformers (TF 2.4)."""
        if self.clipvalue is not None:
            c = self.clipvalue
            pairs = [(wrap(_xp_of(v).clip(_backend(g), -c, c), _device_of(v)), v)
                     for g, v in pairs]
        # norms and scales stay on the gradients' device (0-d arrays): no host read per
        # variable; a gradient that needs no clipping is multiplied by exactly 1
        if self.clipnorm is not None:
            c = self.clipnorm
            out = []
            for g, v in pairs:
                a = _backend(g)
                xp = _xp_of(g)
                n = _norm(xp, a)
                clip = n > c
                scale = xp.where(clip, c / xp.where(clip, n, 1.0), 1.0)
                out.append((wrap(a * scale.astype(a.dtype), _device_of(v)), v))
            pairs = out
        if self.global_clipnorm is not None and pairs:
            c = self.global_clipnorm
            dev = _device_of(pairs[0][0])
            xp = _xp_of(dev)
            total = None
            for g, _ in pairs:          # the squared norms summed in order, in float64
                n = _on(_norm(_xp_of(g), _backend(g)), _device_of(g), dev)
                total = n * n if total is None else total + n * n
            gn = xp.sqrt(total)
            clip = gn > c
            # as tf.clip_by_global_norm: a non-finite global norm makes every gradient NaN
            scale = xp.where(xp.isfinite(gn), xp.where(clip, c / xp.where(clip, gn, 1.0), 1.0),
                             _np.nan)
            out = []
            for g, v in pairs:
                a = _backend(g)
                s = _on(scale, dev, _device_of(g)).astype(a.dtype)
                out.append((wrap(a * s, _device_of(v)), v))
            pairs = out
        for fn in self.gradient_transformers:
            pairs = list(fn(pairs))
        return pairs

    # ================================================================ the update
    def _validated_pairs(self, grads_and_vars, who=None):
        """``(gradient, variable)`` pairs checked (TypeError/ValueError naming ``who``, this
        optimizer by default) with each gradient converted to its variable's dtype and device;
        pairs whose gradient is None are dropped (ValueError if every one is)."""
        who = who or self._name
        pairs = []
        n_given = 0
        for gv in grads_and_vars:
            n_given += 1
            try:
                g, v = gv
            except (TypeError, ValueError):
                raise TypeError(f"{who}.apply_gradients: expected (gradient, variable) "
                                f"pairs, got {gv!r}") from None
            if not isinstance(v, Variable):
                raise TypeError(f"{who}.apply_gradients: expected tt.Variable, got "
                                f"{type(v).__name__}")
            if g is not None:
                pairs.append((self._gradient(g, v), v))
        if not n_given:
            raise ValueError(f"{who}.apply_gradients: no (gradient, variable) pairs")
        if not pairs:
            raise ValueError(f"{who}.apply_gradients: no gradients provided for any variable")
        return pairs

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Mirrors ``Optimizer.apply_gradients(grads_and_vars, name=None,
        experimental_aggregate_gradients=True)``: update each variable with its gradient;
        pairs whose gradient is None are skipped (ValueError if all are). Returns
        ``iterations`` (after the increment).

        Inside a function being compiled (``tt.function``, a compiled ``fit``), the step is an
        effect of the compiled function: it runs at every call, eagerly, with that call's
        gradients (schedules, the step count, clipping and the strategy's aggregation as in an
        eager step)."""
        if _in_trace():
            pairs = list(grads_and_vars)
            if not self._apply_traced(pairs, experimental_aggregate_gradients):
                _effect(self._apply_gradients_now, pairs, experimental_aggregate_gradients)
            return self.iterations
        return self._apply_gradients_now(grads_and_vars, experimental_aggregate_gradients)

    # ---------------------------------------------------------------- compiled steps
    def traced_update_step(self, gradient, variable, learning_rate, step):
        """``update_step`` in tnp operations, for a step inside a function being compiled:
        ``learning_rate`` the rate as a 0-d float64 tnp array (the value an eager step uses),
        ``step`` the 1-based number of this step as a 0-d float64 array. An optimizer that has
        it gets its whole step compiled (see :meth:`_apply_traced`); the base class has none,
        so its step is an effect of the compiled function, run eagerly at every call."""
        raise NotImplementedError

    def _apply_traced(self, pairs, aggregate):
        """Inside a function being compiled: the step in tnp operations (traced, fused with
        the backward pass, replayed at every call) when it is one the tracer can follow whole: an
        elementwise optimizer with :meth:`traced_update_step`, a float learning rate (its
        Variable is read at every call: a callback that sets it is seen), no schedule, decay,
        weight decay, clipping or transformers, no aggregation across replicas, variables
        already built, without constraints, gradients of their dtype and shape. Returns False
        for any other step, which the caller makes an effect."""
        cls = type(self)
        if cls.traced_update_step is Optimizer.traced_update_step or not self.is_elementwise:
            return False
        if self._lr_fn is not None or self._initial_decay or self.weight_decay or \
                self.clipvalue is not None or self.clipnorm is not None or \
                self.global_clipnorm is not None or self.gradient_transformers:
            return False
        if aggregate:
            given = self.gradient_aggregator
            if getattr(given, "__func__", None) is not Optimizer.aggregate_gradients or \
                    getattr(given, "__self__", None) is not self:
                return False
            ds = sys.modules.get("tnp_train.distribute.distribute_lib")
            if ds is not None and ds.get_strategy().num_replicas_in_sync != 1:
                return False
        todo = []
        for pair in pairs:
            try:
                g, v = pair
            except (TypeError, ValueError):
                return False
            if g is None:
                continue
            if not isinstance(v, Variable) or type(v) is VariablePart or \
                    v.constraint is not None or v.key not in self._built_uids or \
                    not isinstance(g, tnp.ndarray) or g.shape != v.shape or \
                    g.dtype != v.dtype or _device_of(g) is not _device_of(v):
                return False
            todo.append((g, v))
        if not todo:
            return False
        one = (1,)
        # the rate an eager step uses: the exact float given while the Variable still holds it
        # rounded, else the Variable's value (as _base_lr); as 1-element arrays (a 0-d
        # comparison gives tnp's shared True/False scalar, which a trace cannot tell apart)
        held = tnp.reshape(self._lr_var, one)
        exact = tnp.where(held == _np.float32(self._lr_float_f32), self._lr_float,
                          held.astype(_np.float64))
        lr = tnp.reshape(exact, ())
        with _tracing.span(f"{type(self).__name__}.apply_gradients", "optimizer"):
            step = tnp.reshape(tnp.reshape(self.iterations, one) + 1, ()).astype(_np.float64)
            many = getattr(self, "traced_update_steps", None)   # all variables at once
            if many is not None:
                many(todo, lr, step)
            else:
                for g, v in todo:
                    self.traced_update_step(g, v, lr, step)
            tnp.add(self.iterations, 1, out=self.iterations)
        return True

    def _apply_gradients_now(self, grads_and_vars, experimental_aggregate_gradients):
        with _tracing.span(f"{type(self).__name__}.apply_gradients", "optimizer"):
            return self._apply_gradients(grads_and_vars, experimental_aggregate_gradients)

    # An optimizer whose update_step is an elementwise rule (each element of a variable and of
    # its slots updated from that element of the gradient and per-step scalars) sets this to its
    # class: the rule then holds on any part of the flat variable, which the sharded update of
    # a strategy (distribute/sharded_update.py) relies on. A subclass that overrides update_step,
    # build or _prepare_step is not assumed to keep it.
    _elementwise_update = None

    @property
    def is_elementwise(self):
        """Whether a step updates each element of a variable and of its slots from that element
        of the gradient and per-step scalars only (no clipping or transformers over whole
        gradients, weight decay fused): then ``update_step`` on a :class:`VariablePart` of a
        variable updates that part exactly as the whole step would."""
        owner = self._elementwise_update
        cls = type(self)
        return (owner is not None and cls.update_step is owner.update_step
                and cls.build is owner.build and cls._prepare_step is owner._prepare_step
                and self.clipvalue is None and self.clipnorm is None
                and self.global_clipnorm is None and not self.gradient_transformers
                and (self._fuses_weight_decay or not self.weight_decay))

    def _apply_gradients(self, grads_and_vars, experimental_aggregate_gradients):
        pairs = self._validated_pairs(grads_and_vars)
        if experimental_aggregate_gradients:
            agg = self.aggregator
            # under a strategy whose ranks share a machine, each may update only its part of
            # weights they share (ZeRO-1; see tnp_train.distribute.sharded_update)
            if agg.updates_sharded and self.is_elementwise:
                apply = agg.sharded_update(pairs, self)
                if apply is not None:
                    self._t = self._steps_taken() + 1
                    lr = self._current_learning_rate()
                    self._prepare_step(lr)
                    apply(lr)
                    self.iterations.update(_increment)
                    self._iter_host.set(self.iterations, self._t)
                    return self.iterations
            pairs = list(agg.reduce(pairs))
        if (self.clipvalue is not None or self.clipnorm is not None or
                self.global_clipnorm is not None or self.gradient_transformers):
            pairs = self._transform_gradients(pairs)
        built = self._built_uids
        if any(v.key not in built for _, v in pairs):
            self._build_new([v for _, v in pairs])
        self._t = self._steps_taken() + 1
        lr = self._current_learning_rate()
        self._prepare_step(lr)
        fused_wd = self._fuses_weight_decay
        for g, v in pairs:
            if g is None:                  # an aggregator or transformer dropped it
                continue
            if type(g) is not tnp.ndarray:
                g = self._gradient(g, v)   # whatever an aggregator or transformer returned
            else:
                ga, va = _backend(g), _backend(v)
                if ga.dtype != va.dtype or ga.shape != va.shape:
                    g = self._gradient(g, v)
            if not fused_wd and self.weight_decay:
                d = self._decay_factor(v, lr)
                if d:
                    # the constraint waits for update_step's write (TF 2.4 applies it once,
                    # after the update)
                    v.update(_decay_in_place, d, constrain=False)
            # the update goes through the variable, which applies its constraint after it
            self.update_step(g, v, lr)
        self.iterations.update(_increment)
        self._iter_host.set(self.iterations, self._t)
        return self.iterations

    def _build_new(self, variables):
        """``build`` the variables not built yet, once each, whichever thread comes first."""
        with self._build_lock:
            built = self._built_uids
            uniq = [v for v in {v.key: v for v in variables}.values() if v.key not in built]
            if uniq:
                self.build(uniq)
                built.update(v.key for v in uniq)

    def _prepare_step(self, learning_rate):
        """Per-step work before the per-variable updates (a subclass's coefficients)."""

    def update_step(self, gradient, variable, learning_rate):
        """Update ``variable`` in place from ``gradient`` (subclasses implement this)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_step")

    def _recorded_loss(self, loss, var_list, tape, then=None):
        """``minimize``'s ``(loss, var_list, tape)``: a callable ``loss`` is called on a new tape
        that watches ``var_list`` (a callable ``var_list`` is called after the loss); otherwise
        ``loss`` must be recorded on ``tape``. ``then(loss)`` (a loss scaling) is recorded
        too."""
        if tape is None:
            if not callable(loss):
                raise ValueError(f"{self._name}.minimize: `tape` is required when `loss` is a "
                                 f"value rather than a callable")
            with GradientTape() as tape:
                if not callable(var_list):
                    var_list = list(var_list)
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = list(var_list())
                    tape.watch(var_list)
                if then is not None:
                    loss = then(loss)
        else:
            if callable(var_list):
                var_list = var_list()
            if then is not None:   # recorded: the tape follows the loss until its first gradient
                loss = then(loss)
        return loss, list(var_list), tape

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Mirrors ``Optimizer.minimize(loss, var_list, grad_loss=None, name=None, tape=None)``:
        ``loss`` is a value recorded on ``tape`` or a no-argument callable (then recorded here);
        ``var_list`` a list of Variables or a callable returning one (called after the loss)."""
        loss, var_list, tape = self._recorded_loss(loss, var_list, tape)
        agg = self.aggregator
        if not agg.streams:
            grads = tape.gradient(loss, var_list, output_gradients=grad_loss)
            return self.apply_gradients(zip(grads, var_list))
        # an aggregator that can start on a gradient as soon as it is final (a strategy's
        # bucketed all-reduce) is handed each one during the backward pass, and may offer where
        # to write them (its buckets), saving a copy; the gradients are only handed to
        # apply_gradients here, so their storage may be the aggregator's
        # (while tracing a compiled step no destination is taken: the bucket a slot belongs
        # to is decided at every run, and a traced backward writes into the program's buffers)
        into = agg.gradient_destination if agg.offers_destination and not _in_trace() else None
        with _abandoned_on_failure(agg):
            grads = tape.gradient(loss, var_list, output_gradients=grad_loss,
                                  gradient_ready=hand_over(agg.gradient_ready),
                                  gradient_destination=into)
        return self.apply_gradients(zip(grads, var_list))

    # ================================================================ config
    def _serialize_learning_rate(self):
        if self._lr_fn is None:
            return self._base_lr()
        if isinstance(self._lr_fn, _schedules.LearningRateSchedule):
            return _schedules.serialize(self._lr_fn)
        return self._lr_fn

    def get_config(self):
        """The constructor arguments (``learning_rate`` a float or a serialized schedule)."""
        return {"name": self._name, "learning_rate": self._serialize_learning_rate(),
                "decay": self._initial_decay, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "clipvalue": self.clipvalue,
                "global_clipnorm": self.global_clipnorm}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = _schedules.deserialize(lr, custom_objects=custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<tt.optimizers.{type(self).__name__} '{self._name}'>"


def _on(a, device, to):
    """Backend array ``a`` of ``device`` on device ``to`` (a copy only when they differ)."""
    return a if device is to else _backend(wrap(a, device).to_device(to))


def _norm(xp, a):
    """L2 norm of backend array ``a`` of module ``xp``, a 0-d float64 array on its device (the
    dot product in ``a``'s precision, at least float32)."""
    f = a.reshape(-1)
    if f.dtype.kind != "c" and f.dtype.itemsize < 4:   # float16/bfloat16: sum in float32
        f = f.astype(_np.float32)
    return xp.sqrt(xp.asarray(xp.abs(xp.vdot(f, f)), dtype=_np.float64))
