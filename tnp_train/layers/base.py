"""``Layer``: the Keras layer contract (TF 2.4 signatures; Keras 3 as a guide for internals).

``__init__`` stores configuration, ``build(input_shape)`` creates weights with ``add_weight``,
``call(inputs, training=None)`` computes; ``__call__`` builds once, on the first input.

What ``__call__`` adds around ``call``:

* **dtype policy.** A layer holds a :class:`~tnp_train.mixed_precision.Policy`. Its variables
  are created in ``variable_dtype``; floating inputs are cast to ``compute_dtype``; and while
  ``call`` runs under a mixed policy each weight attribute (``self.kernel``) reads as a cast of
  its variable to the compute dtype (the cast is recorded on the tape, so the float32 variable
  gets the gradient), which is what Keras's autocast variables do.
* **training.** ``training=None`` inherits the value of the enclosing layer's call, so
  ``model(x, training=True)`` reaches every nested layer (Keras's call context).
* **symbolic calls.** Called on :class:`KerasTensor` placeholders (``tt.Input``), the layer is
  built from the shapes, records a node for the functional API, and returns placeholders.
* **losses.** ``add_loss`` during ``call`` and weight regularizers are collected in
  ``layer.losses`` (recomputed on access, so they are differentiable inside a tape).
* **profiling.** While ``tt.profiler`` records (host tracer level 2), each eager call is a
  ``forward`` span named after the layer; otherwise it costs one read of a module global.

Building is replica-safe: a layer called from several threads at once (MirroredStrategy runs
one replica per thread) is built once, under its own lock; the other threads wait for the build
to finish and then call the built layer.

Weights are ``tt.Variable``s (made through ``tt.Variable``, so a strategy's variable creator
makes them); layers assigned as attributes are tracked, so a layer's
``weights`` are its own followed by its sub-layers', in creation order (Keras's order).
``_trackable_children`` names them for checkpoints (attribute names, not global counters, so a
checkpoint restores into a freshly built model).
"""
from __future__ import annotations

import inspect
import itertools
import threading

import numpy as _np

import tnp
from tnp.extend import (
    device_of as _device_of, get_default_device as _get_default_device, is_floating)

from .. import initializers as _initializers
from ..autodiff import Variable
from ..mixed_precision.policy import Policy, get_policy
from ..utils import tracing as _tracing
from ..utils.naming import snake_case
from ..utils.serialization import register_builtins
from ..utils.tree import flatten, pack_sequence_as
from .keras_tensor import KerasTensor, Node, is_symbolic

__all__ = ["Layer", "InputSpec"]


def _job_on_read_values(variables):
    # beside the layers, but a heavy import that a model without a strategy never needs
    from ..distribute.distribute_lib import job_on_read_values
    return job_on_read_values(variables)


_uid_lock = threading.Lock()
_lock_lock = threading.Lock()     # makes the build lock of a layer that skipped Layer.__init__
_name_counts: dict = {}
_ctx = threading.local()          # .training: the training flag of the enclosing call
_ALLOWED_KWARGS = {"input_shape", "batch_input_shape", "input_dim", "batch_size", "autocast",
                   "dynamic", "weights", "input_length"}


_Metric = None
# bumped whenever a layer gains a sub-layer or a metric: what `Layer.metrics` caches against
# (fit reads a model's metrics a few times a step; walking every layer each time is not free)
_held_versions = itertools.count(1)
_held_version = 0


def _bump_held():
    global _held_version
    _held_version = next(_held_versions)


def _is_metric(value):
    global _Metric
    if _Metric is None:
        from ..metrics.base import Metric   # noqa: PLC0415 - metrics import the layers
        _Metric = Metric
    return isinstance(value, _Metric)


def unique_name(base):
    """``dense``, ``dense_1``, ``dense_2``... per process (Keras's naming)."""
    with _uid_lock:
        n = _name_counts.get(base, 0)
        _name_counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def reset_names():
    """Forget the name counters (``tt.backend.clear_session``)."""
    with _uid_lock:
        _name_counts.clear()


class InputSpec:
    """What a layer accepts (``tf.keras.layers.InputSpec``): ``ndim``/``min_ndim``/``axes``."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None):
        self.dtype, self.shape = dtype, shape
        self.ndim = len(shape) if shape is not None else ndim
        self.max_ndim, self.min_ndim, self.axes = max_ndim, min_ndim, axes or {}


def _shape_of(x):
    if isinstance(x, (tnp.ndarray, _np.ndarray, KerasTensor)):
        return tuple(x.shape)
    return tuple(_np.shape(x))


def _shapes(inputs):
    """The input shape(s) ``build`` receives: a tuple, or a list/dict of tuples."""
    if isinstance(inputs, (list, tuple)):
        return [_shapes(e) for e in inputs]
    if isinstance(inputs, dict):
        return {k: _shapes(v) for k, v in inputs.items()}
    return _shape_of(inputs)


class Layer:
    """Mirrors ``tf.keras.layers.Layer(trainable=True, name=None, dtype=None, dynamic=False)``."""

    _building = None   # the id of the thread running build() while it runs

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        unknown = set(kwargs) - _ALLOWED_KWARGS
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(unknown)}")
        d = self.__dict__
        # reentrant: a build may call the layer (Model.build runs call on zeros)
        d["_build_lock"] = threading.RLock()
        d["_own_weights"] = []
        d["_weight_keys"] = []        # short names, parallel to _own_weights
        d["_weight_attrs"] = {}       # attribute name -> variable (for autocast)
        d["_sublayers"] = []
        d["_sublayer_keys"] = []      # names for checkpoints, parallel to _sublayers
        d["_call_losses"] = threading.local()   # .items: this thread's losses of the last call
        d["_callable_losses"] = []              # add_loss(callable): kept, evaluated on read
        d["_metrics"] = []                      # metric attributes and add_metric's metrics
        self._trainable = bool(trainable)
        d["_dynamic"] = bool(dynamic)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: name must be a string, got {name!r}")
        self.name = name or unique_name(snake_case(type(self).__name__))
        self._dtype_policy = get_policy(dtype)
        self._autocast = kwargs.get("autocast", True)
        self.built = False
        self.supports_masking = getattr(self, "supports_masking", False)
        self.input_spec = None
        self.stateful = False
        if "activity_regularizer" not in self.__dict__:
            self.activity_regularizer = None
        self._inbound_nodes = []
        batch_shape = kwargs.get("batch_input_shape")
        if batch_shape is None:
            shape = kwargs.get("input_shape")
            if shape is None and kwargs.get("input_dim") is not None:
                shape = (kwargs["input_dim"],)
            if shape is not None:
                batch_shape = (kwargs.get("batch_size"),) + tuple(shape)
        self._batch_input_shape = tuple(batch_shape) if batch_shape is not None else None
        self._initial_weights = kwargs.get("weights")
        params = inspect.signature(self.call).parameters
        self._call_takes_training = "training" in params
        self._call_takes_mask = "mask" in params
        self._output_shape_cache = None

    # ------------------------------------------------------------------ attribute tracking
    def __setattr__(self, name, value):
        d = self.__dict__
        if "_sublayers" in d and not name.startswith("_"):
            if isinstance(value, Layer):
                self._track_layer(value, name)
            elif isinstance(value, (list, tuple)) and value and \
                    all(isinstance(v, Layer) for v in value):
                for i, v in enumerate(value):
                    self._track_layer(v, f"{name}/{i}")
            elif isinstance(value, Variable) and any(value is w for w in d["_own_weights"]):
                d["_weight_attrs"][name] = value
            else:
                # a metric held by a layer is one of its `metrics` (TF's Layer.__setattr__):
                # fit resets it each epoch and reports it
                held = (value,) if not isinstance(value, (list, tuple)) else \
                    value if value and _is_metric(value[0]) else ()
                for m in held:
                    if _is_metric(m) and "_metrics" in d and \
                            all(m is not x for x in d["_metrics"]):
                        d["_metrics"].append(m)
                        _bump_held()
        object.__setattr__(self, name, value)

    def _track_layer(self, layer, key):
        if all(layer is not s for s in self._sublayers):
            self._sublayers.append(layer)
            _bump_held()
            self._sublayer_keys.append(key)
            self._restore_deferred(key, layer)

    def _restore_deferred(self, key, child):
        """A checkpoint restored before ``child`` existed left its value here: apply it."""
        pending = self.__dict__.get("_deferred_restorations")
        if pending and key in pending:
            from ..checkpoint import restore_into
            restore_into(child, pending.pop(key))

    def _trackable_children(self):
        """Name -> Variable or trackable object, for checkpoints (stable across processes)."""
        out = {}
        for k, w in zip(self._weight_keys, self._own_weights):
            out[k] = w
        for k, s in zip(self._sublayer_keys, self._sublayers):
            out[k] = s
        return out

    # ------------------------------------------------------------------ dtype policy
    @property
    def dtype_policy(self):
        return self._dtype_policy

    @property
    def dtype(self):
        """The dtype of the layer's variables (Keras: the policy's variable dtype)."""
        return self._dtype_policy.variable_dtype

    @property
    def compute_dtype(self):
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        return self._dtype_policy.variable_dtype

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._sublayers:
            layer.trainable = value

    # ------------------------------------------------------------------ the contract
    def build(self, input_shape):
        """Create the weights for inputs of ``input_shape`` (override; call ``super().build``)."""
        self.built = True

    def call(self, inputs, training=None):
        """The computation (override)."""
        return inputs

    def compute_output_shape(self, input_shape):
        """The output shape for ``input_shape`` (batch dimension included; override). The
        default infers it by running the layer on small zero arrays."""
        raise NotImplementedError

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs: the input mask passes through layers that support masking."""
        return mask if self.supports_masking else None

    def __call__(self, *args, **kwargs):
        a0 = args[0] if args else None
        if isinstance(a0, tnp.ndarray) and (not kwargs or (len(kwargs) == 1 and "training" in kwargs)):
            # the common eager call, decided without walking the arguments
            inputs = self._convert_inputs(a0)
        else:
            if not args:
                if "inputs" not in kwargs:
                    raise TypeError(f"{self.name}: missing the inputs argument")
                args = (kwargs.pop("inputs"),)
            if is_symbolic(args) or is_symbolic(kwargs):
                return self._symbolic_call(args, kwargs)
            inputs = self._convert_inputs(args[0])
        # a layer computes on the device of its inputs: arrays it makes (its weights when the
        # call builds it, kernels' results, masks, statistics) land there even outside a
        # `with tnp.default_device(...)` block
        dev = _device_of(inputs) if isinstance(inputs, tnp.ndarray) else None
        scope = dev if dev is not None and dev is not _get_default_device() else None
        # `built` can turn True before build() returns (Model.build sets it first): while a
        # build runs, other threads go to _maybe_build and wait for it
        if not self.built or self._building is not None:
            if scope is not None:
                with scope:
                    self._maybe_build(_shapes(inputs))
            else:
                self._maybe_build(_shapes(inputs))
        # training: explicit > inherited from the enclosing call > the call's default
        outer = getattr(_ctx, "training", None)
        depth = getattr(_ctx, "depth", 0)
        if self._call_takes_training:
            training = kwargs.get("training")
            if training is None:
                training = outer
            kwargs["training"] = training
        else:
            training = kwargs.pop("training", None)
            if training is None:
                training = outer
        if depth == 0:
            self._clear_losses()
        _ctx.training, _ctx.depth = training, depth + 1
        if scope is not None:
            scope.__enter__()
        # profiling: the call is a `forward` span (checked inline: this path is hot)
        rec = _tracing.active_recorder
        span = None
        if rec is not None:
            span = rec.span(self.name, "forward", None, {"class": type(self).__name__})
            span.__enter__()
        try:
            if self._autocast and self._weight_attrs and self._dtype_policy.is_mixed:
                out = self._call_autocast(inputs, args[1:], kwargs)
            else:
                out = self.call(inputs, *args[1:], **kwargs)
            if self.activity_regularizer is not None:
                # per example, as Keras: the regularizer's value over the batch size
                for o in flatten(out):
                    self.add_loss(self.activity_regularizer(o) / max(1, o.shape[0]) if o.ndim
                                  else self.activity_regularizer(o))
        finally:
            if span is not None:
                span.__exit__(None, None, None)
            _ctx.training, _ctx.depth = outer, depth
            if scope is not None:
                scope.__exit__(None, None, None)
        return out

    def _convert_inputs(self, inputs):
        if isinstance(inputs, tnp.ndarray):        # the common call, with dtype objects only
            if not self._autocast:
                return inputs
            dt = inputs.dtype
            target = self._dtype_policy.compute_np_dtype
            if dt == target or not is_floating(dt):
                return inputs
            return inputs.astype(target)
        compute = self._dtype_policy.compute_dtype if self._autocast else None

        def conv(x):
            if not isinstance(x, tnp.ndarray):
                if x is None or isinstance(x, (str, bytes, int, float, complex, bool)):
                    return x   # Python scalars stay weakly typed (NumPy 2 promotion)
                x = tnp.asarray(x)
            if compute is not None and is_floating(x.dtype) and \
                    x.dtype.name != compute:
                x = x.astype(compute)
            return x

        if isinstance(inputs, (tnp.ndarray, _np.ndarray)):
            return conv(inputs)
        if isinstance(inputs, (list, tuple, dict)):
            return pack_sequence_as(inputs, [conv(x) for x in flatten(inputs)])
        return conv(inputs)

    def _call_autocast(self, inputs, args, kwargs):
        compute = self._dtype_policy.compute_dtype
        saved = {}
        d = self.__dict__
        for attr, var in self._weight_attrs.items():
            if d.get(attr) is var and is_floating(var.dtype) and var.dtype.name != compute:
                saved[attr] = var
                d[attr] = var.astype(compute)
        try:
            return self.call(inputs, *args, **kwargs)
        finally:
            d.update(saved)

    def _get_build_lock(self):
        lock = self.__dict__.get("_build_lock")
        if lock is None:
            with _lock_lock:
                lock = self.__dict__.setdefault("_build_lock", threading.RLock())
        return lock

    def _maybe_build(self, input_shape):
        """Build once: the first thread builds under the layer's lock, the others wait."""
        d = self.__dict__
        if self.built and d.get("_building") is None:
            return
        with self._get_build_lock():
            if self.built:      # built by another thread meanwhile, or by this one (reentry)
                return
            d["_building"] = threading.get_ident()
            try:
                self.build(input_shape)
                self.built = True
                if self._initial_weights is not None:
                    self.set_weights(self._initial_weights)
                    self._initial_weights = None
            finally:
                d["_building"] = None

    # ------------------------------------------------------------------ functional API
    def _symbolic_call(self, args, kwargs):
        from ..autodiff import paused
        shapes = _shapes(args[0])
        if not self.built or self._building is not None:
            self._maybe_build(shapes)
        outputs = None
        if type(self).compute_output_shape is not Layer.compute_output_shape:
            try:
                out_shape = self.compute_output_shape(shapes)
            except NotImplementedError:
                out_shape = None
            if out_shape is not None:
                outputs = self._placeholders_from_shapes(out_shape)
                act = getattr(self, "activation", None)
                if isinstance(act, Layer) and not act.built and isinstance(outputs, KerasTensor):
                    # a layer used as the activation (activation="PReLU") is built on the
                    # output's shape, as calling it would: its weights count from here on
                    act._maybe_build(tuple(out_shape))
        if outputs is None:
            # infer by running on zeros: twice with different sizes for the unknown dimensions,
            # so the output dimensions that follow them come out as None
            with paused():   # probes on zeros, no part of what a tape around this differentiates
                outer_symbolic = getattr(_ctx, "symbolic", False)
                _ctx.symbolic = True    # add_metric leaves the metrics' state alone meanwhile
                try:
                    runs = []
                    for batch, free in ((1, 8), (2, 9)):
                        concrete = pack_sequence_as((args, kwargs), [
                            _zeros_for(t, batch, free) if isinstance(t, KerasTensor) else t
                            for t in flatten((args, kwargs))])
                        kw = dict(concrete[1])
                        kw.setdefault("training", False)
                        runs.append(self(*concrete[0], **kw))
                finally:
                    _ctx.symbolic = outer_symbolic
            a, b = (flatten(r) for r in runs)
            leaves = [KerasTensor(tuple(None if da != db else da for da, db in zip(x.shape, y.shape)),
                                  x.dtype.name) for x, y in zip(a, b)]
            outputs = pack_sequence_as(runs[0], leaves)
        node = Node(self, args, kwargs, outputs)
        for i, t in enumerate(flatten(outputs)):
            t._node, t._index = node, i
        self._inbound_nodes.append(node)
        self._output_shape_cache = pack_sequence_as(outputs, [t.shape for t in flatten(outputs)])
        return outputs

    def _placeholders_from_shapes(self, shape):
        def is_shape(s):
            return isinstance(s, tuple) and all(d is None or isinstance(d, (int, _np.integer)) for d in s)
        if is_shape(tuple(shape)) if isinstance(shape, (list, tuple)) else False:
            return KerasTensor(tuple(shape), self.compute_dtype)
        if isinstance(shape, (list, tuple)):
            return [self._placeholders_from_shapes(s) for s in shape]
        if isinstance(shape, dict):
            return {k: self._placeholders_from_shapes(v) for k, v in shape.items()}
        raise TypeError(f"{self.name}.compute_output_shape returned {shape!r}")

    @property
    def output_shape(self):
        if self._output_shape_cache is None:
            raise AttributeError(f"The layer {self.name} has never been called on symbolic "
                                 f"inputs and thus has no defined output shape.")
        return self._output_shape_cache

    @property
    def input(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        ins = self._inbound_nodes[0].inputs
        return ins[0] if len(ins) == 1 else ins

    @property
    def output(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} has no inbound nodes.")
        return self._inbound_nodes[0].outputs

    @property
    def call_takes_mask(self):
        """Whether this layer's ``call`` has a ``mask`` argument (tf.keras's private
        ``_expects_mask_arg``): a model running its layers hands the incoming mask only to
        those that take one."""
        return self._call_takes_mask

    @property
    def inbound_nodes(self):
        """The functional-API calls of this layer (``Node``s: ``layer``, ``args``, ``kwargs``,
        ``outputs``), in call order."""
        return list(self._inbound_nodes)

    @property
    def input_shape(self):
        """The shape(s) of this layer's input in the functional graph (TF 2.4's
        ``Layer.input_shape``: an InputLayer's is a list of one shape, as TF's)."""
        if not self._inbound_nodes:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no "
                                 f"defined input shape.")
        shapes = [_node_input_shapes(n) for n in self._inbound_nodes]
        if any(s != shapes[0] for s in shapes[1:]):
            raise AttributeError(f"The layer \"{self.name}\" has multiple inbound nodes, with "
                                 f"different input shapes {shapes}. Hence the notion of "
                                 f"\"input shape\" is ill-defined for the layer. Use "
                                 f"`get_input_shape_at(node_index)` instead.")
        return shapes[0]

    def _node_at(self, node_index, what):
        if not self._inbound_nodes:
            raise RuntimeError(f"The layer {self.name} has never been called and thus has no "
                               f"defined {what}.")
        if not 0 <= node_index < len(self._inbound_nodes):
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer "
                             f"{self.name} has only {len(self._inbound_nodes)} inbound nodes.")
        return self._inbound_nodes[node_index]

    def get_input_at(self, node_index):
        """The input tensor(s) of the layer's ``node_index``-th call in the functional graph."""
        node = self._node_at(node_index, "input")
        if isinstance(self, _input_layer_type()):
            return node.outputs
        ins = node.args[0] if node.args else node.inputs
        return ins[0] if isinstance(ins, (list, tuple)) and len(ins) == 1 else ins

    def get_output_at(self, node_index):
        """The output tensor(s) of the layer's ``node_index``-th call."""
        return self._node_at(node_index, "output").outputs

    def get_input_shape_at(self, node_index):
        """The input shape(s) of the layer's ``node_index``-th call."""
        return _node_input_shapes(self._node_at(node_index, "input shape"))

    def get_output_shape_at(self, node_index):
        """The output shape(s) of the layer's ``node_index``-th call."""
        out = self._node_at(node_index, "output shape").outputs
        return pack_sequence_as(out, [tuple(t.shape) for t in flatten(out)])

    @property
    def dynamic(self):
        """``dynamic=`` of the constructor (layers here always run eagerly)."""
        return self.__dict__.get("_dynamic", False)

    # ------------------------------------------------------------------ weights
    def add_variable(self, *args, **kwargs):
        """TF 2.4's deprecated alias of :meth:`add_weight`."""
        return self.add_weight(*args, **kwargs)

    def add_update(self, updates, inputs=None):
        """TF 2.4's ``Layer.add_update`` in eager mode: a callable update runs now; an update
        already applied (an ``assign``'s result) needs nothing more."""
        for update in flatten(updates) if isinstance(updates, (list, tuple)) else [updates]:
            if callable(update) and not isinstance(update, tnp.ndarray):
                update()

    def add_weight(self, name=None, shape=(), dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, aggregation="none", synchronization="auto",
                   **kwargs):
        """A new ``tt.Variable`` owned by this layer; mirrors ``Layer.add_weight``. Created in
        the policy's variable dtype unless ``dtype`` is given."""
        if kwargs:
            raise TypeError(f"{self.name}.add_weight: unexpected keyword arguments {sorted(kwargs)}")
        dtype = _np.dtype(dtype or self._dtype_policy.variable_dtype)
        init = _initializers.get(initializer if initializer is not None else
                                 ("glorot_uniform" if is_floating(dtype) else "zeros"))
        shape = tuple(int(s) for s in (shape or ()))
        value = init(shape, dtype=dtype.name)
        if trainable is None:
            trainable = True
        if str(synchronization).lower().endswith("on_read"):
            trainable = False
        with self._get_build_lock():   # a unique key, and the weight lists kept parallel
            key = name or "weight"
            if key in self._weight_keys:
                k = 1
                while f"{key}_{k}" in self._weight_keys:
                    k += 1
                key = f"{key}_{k}"
            if constraint is not None:      # a name or a config, as Keras's add_weight takes
                from .. import constraints as _constraints
                constraint = _constraints.get(constraint)
            v = Variable(value, trainable=trainable, name=f"{self.name}/{key}", dtype=dtype,
                         aggregation=aggregation, synchronization=synchronization,
                         constraint=constraint)
            self._own_weights.append(v)
            self._weight_keys.append(key)
            self._restore_deferred(key, v)
        if regularizer is not None:
            from .. import regularizers as _regularizers
            reg = _regularizers.get(regularizer)
            self.__dict__.setdefault("_weight_regularizers", []).append((v, reg))
        return v

    @property
    def weights(self):
        """All weights: this layer's, then its sub-layers', in creation order."""
        return self._with_sublayers(list(self._own_weights), "weights")

    def _with_sublayers(self, out, attr):
        """``out`` (this layer's weights) then each sub-layer's ``attr``, each weight once (a
        shared one where it first appears)."""
        seen = {id(w) for w in out}
        for layer in self._sublayers:
            for w in getattr(layer, attr):
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
        return out

    @property
    def variables(self):
        return self.weights

    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        return self._with_sublayers([w for w in self._own_weights if w.trainable],
                                    "trainable_weights")

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_weights(self):
        train = {id(t) for t in self.trainable_weights}
        return [w for w in self.weights if id(w) not in train]

    @property
    def non_trainable_variables(self):
        return self.non_trainable_weights

    def _flatten_layers(self, include_self=True):
        if include_self:
            yield self
        for s in self._sublayers:
            yield from s._flatten_layers(True)

    def get_weights(self):
        """The weights' values as NumPy arrays, in ``weights`` order. Under a multi-worker
        strategy an ON_READ weight (BatchNormalization's moving statistics) gives the job's
        value, as TF's cross-replica read does (one collective: every worker calls it)."""
        weights = self.weights
        with _job_on_read_values(lambda: weights):
            return [w.numpy() for w in weights]

    def set_weights(self, weights):
        """Assign values (NumPy or tnp arrays, in ``weights`` order); shapes must match."""
        mine = self.weights
        weights = list(weights)
        if len(weights) != len(mine):
            raise ValueError(f"You called `set_weights(weights)` on layer \"{self.name}\" with a "
                             f"weight list of length {len(weights)}, but the layer was expecting "
                             f"{len(mine)} weights.")
        for w, value in zip(mine, weights):
            if tuple(_np.shape(value)) != tuple(w.shape):
                raise ValueError(f"Layer {self.name} weight shape {w.shape} is not compatible "
                                 f"with provided weight shape {_np.shape(value)} ({w.name})")
        for w, value in zip(mine, weights):
            w.assign(tnp.asarray(_np.asarray(value), dtype=w.dtype))

    def count_params(self):
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             f"layer isn't built.")
        return int(sum(int(_np.prod(w.shape)) for w in self.weights))

    # ------------------------------------------------------------------ losses
    def add_loss(self, losses, inputs=None):
        """Add loss terms to ``layer.losses`` (``tf.keras.layers.Layer.add_loss``).

        * in ``call``: an array, counted for this call only (each outermost call starts
          afresh; under MirroredStrategy each replica thread keeps its own);
        * a callable of no arguments, at any time: kept, and evaluated whenever ``losses`` is
          read (so it is differentiable inside a tape);
        * on a functional model, a symbolic tensor computed from the model's inputs: the
          graph computes it on every call (TF's ``AddLoss`` layer).

        An array outside ``call`` raises ValueError, as in TF: wrap it in a ``lambda``."""
        for loss in flatten(losses) if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            if callable(loss) and not isinstance(loss, (tnp.ndarray, KerasTensor)):
                self._callable_losses.append(loss)
            elif isinstance(loss, KerasTensor):
                self._add_symbolic("add_loss", loss)
            elif getattr(_ctx, "depth", 0) > 0:
                self._call_loss_list().append(loss)
            else:
                raise ValueError(f"{self.name}.add_loss: expected a callable or a symbolic "
                                 f"tensor outside the layer's call, got "
                                 f"{type(loss).__name__}. Wrap your loss computation in a zero "
                                 f"argument `lambda`.")

    def _add_symbolic(self, method, tensor, **kwargs):
        raise ValueError(f"{self.name}.{method}: a symbolic tensor ({tensor!r}) can be added only "
                         f"to a functional model (tt.Model(inputs, outputs)) that computes it "
                         f"from its inputs; inside a layer's call pass the array itself, or "
                         f"pass a zero argument `lambda`")

    def _call_loss_list(self):
        d = self.__dict__
        d["_adds_losses"] = True     # the other layers skip the thread-local store
        store = d["_call_losses"]
        items = getattr(store, "items", None)
        if items is None:
            items = store.items = []
        return items

    def _clear_losses(self):
        for layer in self._flatten_layers():
            d = layer.__dict__
            if d.get("_adds_losses") and getattr(d["_call_losses"], "items", None):
                d["_call_losses"].items = []

    @property
    def losses(self):
        """The losses of this thread's last call (of this layer and its sub-layers), the weight
        regularization terms and the callables given to ``add_loss``, evaluated now."""
        out = []
        for layer in self._flatten_layers():
            d = layer.__dict__
            if d.get("_adds_losses"):
                out.extend(getattr(d["_call_losses"], "items", None) or ())
            for v, reg in d.get("_weight_regularizers", ()):
                out.append(reg(v))
            for fn in d.get("_callable_losses", ()):
                value = fn()
                if value is not None:
                    out.append(value)
        return out

    # ------------------------------------------------------------------ metrics
    def add_metric(self, value, name=None, aggregation=None):
        """Report the mean of ``value`` as metric ``name`` (``Layer.add_metric`` of TF 2.4).

        Inside ``call``: a ``Mean`` metric called ``name`` (made on the first call, and one of
        the layer's ``metrics``) is updated with ``value``; the result of calling a metric the
        layer holds updates nothing more and reports that metric. On a functional model a
        symbolic tensor computed from the model's inputs is averaged on every call."""
        if aggregation not in (None, "mean"):
            raise ValueError(f"{self.name}.add_metric: only the 'mean' aggregation is "
                             f"supported, got aggregation={aggregation!r}")
        held = self._metric_of_result(value)
        if name is None and held is None:
            raise ValueError(f"{self.name}.add_metric: please give your metric a name, like "
                             f"`self.add_metric(tnp.sum(inputs), name='mean_activation')`")
        if isinstance(value, KerasTensor):
            return self._add_symbolic("add_metric", value, name=name)
        if getattr(_ctx, "depth", 0) == 0:
            raise ValueError(f"{self.name}.add_metric: expected a symbolic tensor (on a "
                             f"functional model) or a call from inside `call`, got "
                             f"{type(value).__name__}")
        if held is not None:
            return        # the metric is the layer's already: its state is updated
        with self._get_build_lock():
            metric = next((m for m in self._metrics if m.name == name), None)
            if metric is None:
                from ..metrics import Mean   # noqa: PLC0415 - metrics import the layers
                # the value's float dtype, as TF, but never a 16-bit total (a float16 sum
                # over an epoch overflows at 65504)
                dtype = getattr(value, "dtype", None)
                wide = dtype is not None and is_floating(dtype) and _np.dtype(dtype).itemsize > 2
                metric = Mean(name=name, dtype=dtype if wide else None)
                self._metrics.append(metric)
                _bump_held()
        if not getattr(_ctx, "symbolic", False):
            metric.update_state(value)

    def _metric_of_result(self, value):
        """The metric this layer (or a sub-layer) holds whose last call on this thread
        returned ``value``, or None."""
        for layer in self._flatten_layers():
            for m in layer.__dict__.get("_metrics", ()):
                last = getattr(m.__dict__.get("_last_results"), "value", None)
                if last is not None and last is value:
                    return m
        return None

    @property
    def metrics(self):
        """The metrics this layer and its sub-layers hold (attributes, ``add_metric``)."""
        cached = self.__dict__.get("_metrics_cache")
        if cached is not None and cached[0] == _held_version:
            return list(cached[1])
        version = _held_version
        out, seen = [], set()
        for layer in self._flatten_layers():
            for m in layer.__dict__.get("_metrics", ()):
                if id(m) not in seen:
                    seen.add(id(m))
                    out.append(m)
        self.__dict__["_metrics_cache"] = (version, out)
        return list(out)

    @property
    def submodules(self):
        """``tf.Module.submodules``: every layer and metric nested in this one (not itself),
        each once, breadth first; a layer's sub-layers in the order it tracked them, then its
        metrics. As in tf-keras, the set is what its ``submodules`` holds, except a
        ``Sequential``'s implicit input layer, which is not an object here."""
        out, seen = [], {id(self)}
        queue = [self]
        while queue:
            layer = queue.pop(0)
            d = layer.__dict__
            for child in (*d.get("_sublayers", ()), *d.get("_metrics", ())):
                if id(child) not in seen:
                    seen.add(id(child))
                    out.append(child)
                    if isinstance(child, Layer):
                        queue.append(child)
        return tuple(out)

    # ------------------------------------------------------------------ config
    def get_config(self):
        cfg = {"name": self.name, "trainable": self.trainable,
               "dtype": self._dtype_policy.name}
        if self._batch_input_shape is not None:
            cfg["batch_input_shape"] = list(self._batch_input_shape)
        return cfg

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = Policy.from_config(config["dtype"].get("config", config["dtype"]))
        if config.get("batch_input_shape") is not None:
            config["batch_input_shape"] = tuple(config["batch_input_shape"])
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


# the mixed-precision names (below the layers) tell a layer by this class
register_builtins("layer", {"Layer": Layer})


def _input_layer_type():
    from .core import InputLayer   # noqa: PLC0415 - core defines its layers on this module
    return InputLayer


def _node_input_shapes(node):
    """The shapes of a node's first call argument, in its structure (an InputLayer's node: a
    list of its one shape, as TF reports it)."""
    if isinstance(node.layer, _input_layer_type()):
        return [tuple(t.shape) for t in flatten(node.outputs)]
    first = node.args[0] if node.args else node.inputs
    leaves = flatten(first)
    if not any(isinstance(t, KerasTensor) for t in leaves):
        first = node.inputs
        leaves = flatten(first)
    return pack_sequence_as(first, [tuple(t.shape) if isinstance(t, KerasTensor) else t
                                    for t in leaves])


def _zeros_for(t, batch, free):
    shape = tuple((batch if i == 0 else free) if d is None else d for i, d in enumerate(t.shape))
    return tnp.zeros(shape, dtype=t.dtype)


def running_on_placeholders():
    """True while a layer runs on zeros standing for symbolic inputs (shape inference, a
    model's ``build``): what it computes then is not data, so state is left alone."""
    return getattr(_ctx, "symbolic", False)


def current_training():
    """The training flag of the layer call in progress on this thread (None outside calls)."""
    return getattr(_ctx, "training", None)


def seeded_generators(layer):
    """The NumPy generators of ``layer`` and of the layers nested in it that were made with
    their own ``seed`` (Dropout, the noise and random image layers), each once, ``layer``'s
    first, then depth first in the order the layers were tracked: the state
    ``BackupAndRestore`` saves and restores."""
    gens, seen = [], set()
    for sub in layer._flatten_layers():
        rng = getattr(sub, "_rng", None)
        if isinstance(rng, _np.random.Generator) and id(rng) not in seen:
            seen.add(id(rng))
            gens.append(rng)
    return gens
