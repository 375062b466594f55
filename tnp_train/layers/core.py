"""Core layers: ``Input``/``InputLayer``, ``Dense``, ``Activation``, ``Dropout``, ``Flatten``,
``Reshape``, ``Permute``, ``RepeatVector``, ``Lambda``, ``Masking`` (TF 2.4 signatures)."""
from __future__ import annotations

import importlib
import math
import operator

import numpy as _np

import tnp

from .. import activations as _activations
from .. import initializers as _initializers
from ..ops.dense import dense as _dense_op
from ..utils.random import keep_mask, make_rng
from ._common import add_option_weight, positive_int
from .base import Layer
from .keras_tensor import KerasTensor, Node

__all__ = ["InputLayer", "Input", "Dense", "Activation", "Dropout", "Flatten", "Reshape",
           "Permute", "RepeatVector", "Lambda", "Masking", "TFOpLambda", "TnpOpLambda", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization"]


def _serialize(obj):
    """A Keras-style ``{"class_name", "config"}`` for initializers/regularizers/constraints."""
    if obj is None:
        return None
    if isinstance(obj, str):
        return obj
    cfg = obj.get_config() if hasattr(obj, "get_config") else {}
    return {"class_name": type(obj).__name__, "config": cfg}


def _serialize_constraint(c):
    from .. import constraints as _constraints
    return _constraints.serialize(c)


def set_weight_options(layer, **options):
    """Set Keras's weight arguments on ``layer`` as attributes: ``activation`` (through
    ``activations.get``), ``use_bias``, and every ``*_initializer``, ``*_regularizer`` and
    ``*_constraint`` (through their modules' ``get``), the one way every layer reads them."""
    from .. import constraints as _constraints
    from .. import regularizers as _regularizers
    for name, value in options.items():
        if name == "activation":
            value = _activations.get(value)
        elif name == "use_bias":
            value = bool(value)
        elif name.endswith("_initializer"):
            value = _initializers.get(value)
        elif name.endswith("_regularizer"):
            value = _regularizers.get(value)
        elif name.endswith("_constraint"):
            value = _constraints.get(value)
        else:
            raise TypeError(f"set_weight_options: {name!r} is not a weight argument")
        setattr(layer, name, value)


def weight_options(args):
    """The weight arguments of :func:`set_weight_options` among ``args`` (a constructor's
    ``locals()``)."""
    return {k: v for k, v in args.items() if k in ("activation", "use_bias")
            or k.endswith(("_initializer", "_regularizer", "_constraint"))}


def weight_options_config(layer, *names):
    """The ``get_config`` entries of the weight arguments ``names`` set by
    :func:`set_weight_options` (Keras's serialized forms)."""
    out = {}
    for name in names:
        value = getattr(layer, name)
        if name == "activation":
            value = _activations.serialize(value)
        elif name.endswith("_constraint"):
            value = _serialize_constraint(value)
        elif name != "use_bias":
            value = _serialize(value)
        out[name] = value
    return out


def _dimension(d, shape, what="shape"):
    """``d`` as a dimension (a non-negative int, or None for an unknown size), as TF's
    ``Dimension``: TypeError for a non-integer, ValueError for a negative one."""
    if d is None:
        return None
    if isinstance(d, bool) or not hasattr(type(d), "__index__"):
        raise TypeError(f"Input: dimension {d!r} ({type(d).__name__}) of {what} {shape!r} is "
                        f"not an integer or None")
    d = operator.index(d)
    if d < 0:
        raise ValueError(f"Input: negative dimensions are not allowed, got {what}={shape!r} "
                         f"(use None for a dimension of unknown size)")
    return d


class InputLayer(Layer):
    """The entry of a functional model; ``tt.Input`` creates one and returns its output."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, name=None, sparse=False,
                 ragged=False, batch_input_shape=None, **kwargs):
        if batch_input_shape is not None:
            batch_size, input_shape = batch_input_shape[0], tuple(batch_input_shape[1:])
        if input_shape is None:
            raise ValueError("InputLayer: an input_shape (without the batch dimension) is required")
        shape = tuple(input_shape)
        dims = tuple(_dimension(d, shape) for d in shape)
        batch_size = _dimension(batch_size, batch_size, "batch_size")
        if name is None:
            from .base import unique_name
            name = unique_name("input")
            name = name if name != "input" else unique_name("input")   # input_1, input_2, ...
        # newer tf.keras writes "optional" (an input that may be None) in its JSON: only
        # required inputs exist here, so False is accepted and dropped
        if kwargs.pop("optional", False):
            raise ValueError(f"InputLayer {name!r}: optional inputs are not supported")
        # a string input (TF's tf.string) holds NumPy strings; the layer itself computes nothing
        string = isinstance(dtype, str) and dtype in ("string", "str", "object")
        super().__init__(name=name, dtype="float32" if string or dtype is None else dtype,
                         **kwargs)
        self._dims = dims
        self.batch_size = batch_size
        self.built = True
        self.sparse, self.ragged = sparse, ragged
        if sparse or ragged:
            raise NotImplementedError("InputLayer: sparse and ragged inputs are not supported")
        dt = _np.dtype(dtype).name if dtype is not None and not isinstance(dtype, str) else (dtype or None)
        self._input_dtype = "string" if string else (dt or self.compute_dtype)
        out = KerasTensor((batch_size,) + self._dims,
                          "object" if string else self._input_dtype, name=self.name)
        node = Node(self, (), {}, out)
        out._node = node
        self._inbound_nodes.append(node)
        self._output_shape_cache = out.shape
        self._output_tensor = out

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_input_shape": [self.batch_size, *self._dims],
                "dtype": self._input_dtype, "name": self.name, "sparse": False, "ragged": False}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=False, tensor=None,  # noqa: N802
          ragged=False, batch_shape=None, **kwargs):
    """Mirrors ``tf.keras.Input(shape=None, batch_size=None, name=None, dtype=None, ...)``: a
    symbolic tensor to build functional models from (or to start a ``Sequential``)."""
    if batch_shape is not None:
        batch_size, shape = batch_shape[0], tuple(batch_shape[1:])
    if shape is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` argument. Note that "
                         "`shape` does not include the batch dimension.")
    if tensor is not None:
        raise NotImplementedError("Input(tensor=...) is not supported")
    if isinstance(shape, int):
        shape = (shape,)
    layer = InputLayer(input_shape=tuple(shape), batch_size=batch_size, name=name, dtype=dtype,
                       sparse=sparse, ragged=ragged, **kwargs)
    return layer._output_tensor


_DENSE_WEIGHT_ARGS = ("kernel_initializer", "bias_initializer", "kernel_regularizer",
                      "bias_regularizer", "activity_regularizer", "kernel_constraint",
                      "bias_constraint")


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; mirrors ``tf.keras.layers.Dense`` (kernel of shape
    ``(input_dim, units)``). Inputs of rank > 2 are multiplied along their last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        # Keras refuses only negative units: Dense(0) makes an empty (batch, 0) output
        self.units = positive_int(units, "Dense", "units", "Received an invalid value for "
                                  "`units`, expected a positive integer, got {value}.",
                                  allow_zero=True)
        set_weight_options(self, **weight_options(locals()))
        self.supports_masking = True
        self._relu = self.activation is _activations.get("relu")

    def build(self, input_shape):
        last = input_shape[-1]
        if last is None:
            raise ValueError(f"The last dimension of the inputs to `Dense` should be defined. "
                             f"Found `None` (input shape {tuple(input_shape)}).")
        self.kernel = add_option_weight(self, "kernel", (int(last), self.units))
        self.bias = add_option_weight(self, "bias", (self.units,)) if self.use_bias else None
        super().build(input_shape)

    def call(self, inputs):
        x = inputs
        if x.ndim == 0 or x.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected axis -1 of input shape to have value "
                             f"{self.kernel.shape[0]} but received input with shape {x.shape}")
        y = _dense_op(x, self.kernel, self.bias, relu=self._relu)
        return y if self._relu else self.activation(y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units, **weight_options_config(
            self, "activation", "use_bias", *_DENSE_WEIGHT_ARGS)}


class Activation(Layer):
    """Applies an activation function (``tf.keras.layers.Activation(activation)``)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = _activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "activation": _activations.serialize(self.activation)}


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs during training and scales the rest by
    ``1 / (1 - rate)``; the identity at inference (``tf.keras.layers.Dropout``)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= float(rate) <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value "
                             f"between 0 and 1. Received: rate={rate}")
        self.rate = float(rate)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self._rng = make_rng(seed) if seed is not None else None
        self.supports_masking = True

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return inputs * 0
        shape = self._get_noise_shape(inputs)
        # under a strategy, this replica's rows of the global batch's mask (noise_shape's first
        # entry 1: one mask for the whole batch, every replica's the same)
        per_sample = self.noise_shape is None or self.noise_shape[0] is None or \
            int(self.noise_shape[0]) != 1
        keep = keep_mask(shape, self.rate, self._rng, per_sample)
        scale = keep.astype(inputs.dtype) * inputs.dtype.type(1.0 / (1.0 - self.rate))
        return inputs * tnp.asarray(scale, device=inputs.device)

    def _get_noise_shape(self, inputs):
        """The shape of the keep mask: the inputs', or ``noise_shape`` with its ``None``
        entries taken from the inputs."""
        if self.noise_shape is None:
            return inputs.shape
        if len(self.noise_shape) != inputs.ndim:
            # TF would broadcast the shorter mask against the trailing axes: refused
            raise ValueError(f"{self.name}: noise_shape {self.noise_shape} does not have the rank "
                             f"of the inputs, of shape {tuple(inputs.shape)}")
        return tuple(s if n is None else n for s, n in zip(inputs.shape, self.noise_shape))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate,
                "noise_shape": list(self.noise_shape) if self.noise_shape else None,
                "seed": self.seed}


class Flatten(Layer):
    """Flattens every axis but the batch axis (``tf.keras.layers.Flatten``; channels_last)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"Flatten: invalid data_format {data_format!r}")
        self.data_format = data_format

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first" and x.ndim > 2:
            x = tnp.moveaxis(x, 1, -1)
        return tnp.reshape(x, (x.shape[0], -1)) if x.ndim != 1 else tnp.reshape(x, (-1, 1))

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        n = None if any(d is None for d in rest) else int(math.prod(rest))
        return (input_shape[0], n if rest else 1)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes every sample to ``target_shape`` (one -1 allowed; ``tf.keras.layers.Reshape``)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"Reshape: there can only be one unknown dimension in target_shape "
                             f"{self.target_shape}")

    def _resolve(self, input_shape):
        n = math.prod(input_shape[1:]) if all(d is not None for d in input_shape[1:]) else None
        shape = list(self.target_shape)
        if -1 in shape and n is not None:
            known = math.prod(d for d in shape if d != -1)
            if known == 0 or n % known:
                raise ValueError(f"Reshape: total size of the new array must be unchanged, input "
                                 f"shape {tuple(input_shape[1:])}, target_shape {self.target_shape}")
            shape[shape.index(-1)] = n // known
        elif n is not None and math.prod(shape) != n:
            raise ValueError(f"Reshape: total size of the new array must be unchanged, input shape "
                             f"{tuple(input_shape[1:])}, target_shape {self.target_shape}")
        return tuple(None if d == -1 else d for d in shape)

    def call(self, inputs):
        self._resolve(inputs.shape)
        return tnp.reshape(inputs, (inputs.shape[0],) + self.target_shape)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self._resolve(tuple(input_shape))

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Permute(Layer):
    """Permutes the non-batch axes by ``dims`` (1-based, ``tf.keras.layers.Permute``)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute Layer. The set of "
                             f"indices in `dims` must be consecutive and start from 1. "
                             f"Received dims={self.dims}")

    def call(self, inputs):
        if inputs.ndim != len(self.dims) + 1:
            raise ValueError(f"{self.name}: inputs of shape {inputs.shape} do not have "
                             f"{len(self.dims) + 1} dimensions for dims={self.dims}")
        return tnp.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": list(self.dims)}


class RepeatVector(Layer):
    """Repeats a (batch, features) input ``n`` times: (batch, n, features)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, inputs):
        if inputs.ndim != 2:
            raise ValueError(f"{self.name}: expected inputs of rank 2, got shape {inputs.shape}")
        return tnp.repeat(tnp.expand_dims(inputs, 1), self.n, axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class Masking(Layer):
    """Masks time steps whose features all equal ``mask_value`` (``tf.keras.layers.Masking``)."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return tnp.any(inputs != self.mask_value, axis=-1)

    def call(self, inputs):
        keep = tnp.any(inputs != self.mask_value, axis=-1, keepdims=True)
        return inputs * keep.astype(inputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


class Lambda(Layer):
    """Wraps a function of tnp arrays as a layer (``tf.keras.layers.Lambda``). Its config keeps
    the function's name only: a model with a Lambda loads back with ``custom_objects``."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {type(function).__name__}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._out_shape = output_shape
        self._mask = mask

    def call(self, inputs):
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs, mask=None):
        if callable(self._mask):
            return self._mask(inputs, mask)
        return self._mask

    def get_config(self):
        return {**super().get_config(), "function": getattr(self.function, "__name__", "lambda"),
                "arguments": self.arguments}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        fn = config.pop("function")
        if not callable(fn):
            found = (custom_objects or {}).get(fn)
            if found is None:
                raise ValueError(f"Lambda.from_config: the function {fn!r} cannot be restored from "
                                 f"a config; pass it in custom_objects={{{fn!r}: fn}}")
            fn = found
        return cls(fn, **config)


class TFOpLambda(Lambda):
    """An operator applied to symbolic tensors (``x + y`` on ``tt.Input``s) as a layer."""

    def call(self, inputs):
        if isinstance(inputs, list):
            return self.function(*inputs)
        return self.function(inputs)


class TnpOpLambda(TFOpLambda):
    """A tnp function applied to symbolic tensors (``tnp.square(z)``, ``tnp.mean(x, axis=-1)``
    on ``tt.Input``s) as a layer, as TF makes a ``TFOpLambda`` of a ``tf.*`` op on a
    KerasTensor: called with the function's own arguments; its config names the function
    (``"tnp.linalg.norm"``), so a model with one saves and loads without custom objects."""

    def __init__(self, function, op=None, **kwargs):
        super().__init__(function, **kwargs)
        self.op = op or f"tnp.{getattr(function, '__name__', 'op')}"

    def call(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def get_config(self):
        config = Layer.get_config(self)
        config["op"] = self.op
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        op = config.pop("op")
        fn = _resolve_tnp_op(op)
        return cls(fn, op=op, **config)


def _resolve_tnp_op(op):
    """The tnp function named ``op`` (``"tnp.mean"``, ``"tnp.linalg.norm"``,
    ``"tnp.add.reduce"``), or the backend function (``"tnp_train.backend.std"``)."""
    parts = op.split(".")
    if parts[0] != "tnp" and not (parts[:2] == ["tnp_train", "backend"] and len(parts) == 3):
        raise ValueError(f"TnpOpLambda: {op!r} is not a tnp function")
    # a name read from a saved model, walked from its top-level package through the public
    # namespace as the user's code reaches it: the backend functions, a floor above the
    # layers, are imported (by tnp_train's lazy attributes) only when a model names one
    obj = importlib.import_module(parts[0])
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"TnpOpLambda: tnp has no function {op!r}") from None
    return obj


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep decision per (sample, channel), shared over the
    ``rank`` spatial axes (TF 2.4 ``SpatialDropout*D``)."""

    rank = 1

    def __init__(self, rate, data_format=None, **kwargs):
        kwargs.pop("noise_shape", None)     # derived from the inputs
        super().__init__(rate, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{type(self).__name__}: data_format must be in "
                             f"{{'channels_last', 'channels_first'}}, got {data_format!r}")
        self.data_format = data_format or "channels_last"

    def call(self, inputs, training=None):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim={self.rank + 2}, found ndim={inputs.ndim}. Full shape "
                             f"received: {tuple(inputs.shape)}")
        return super().call(inputs, training=training)

    def _get_noise_shape(self, inputs):
        n, ones = inputs.shape[0], (1,) * self.rank
        if self.data_format == "channels_first":
            return (n, inputs.shape[1]) + ones
        return (n,) + ones + (inputs.shape[-1],)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("noise_shape")
        if self.rank > 1:
            cfg["data_format"] = self.data_format
        return cfg


class SpatialDropout1D(_SpatialDropout):
    """Mirrors ``tf.keras.layers.SpatialDropout1D(rate)``: drops whole channels of a (batch,
    steps, channels) input in training, scaling the rest by ``1 / (1 - rate)``."""

    rank = 1

    def __init__(self, rate, **kwargs):
        super().__init__(rate, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Mirrors ``tf.keras.layers.SpatialDropout2D(rate, data_format=None)``; its config also
    keeps ``data_format`` (TF 2.4's loses it)."""

    rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Mirrors ``tf.keras.layers.SpatialDropout3D(rate, data_format=None)``; its config also
    keeps ``data_format`` (TF 2.4's loses it)."""

    rank = 3


class ActivityRegularization(Layer):
    """Mirrors ``tf.keras.layers.ActivityRegularization(l1=0., l2=0.)``: the identity, adding
    ``(l1 * sum|x| + l2 * sum x^2) / batch_size`` to ``layer.losses`` at each call."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):  # noqa: E741 (Keras's names)
        from .. import regularizers as _regularizers
        kwargs.pop("activity_regularizer", None)
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activity_regularizer = _regularizers.L1L2(l1=l1, l2=l2)
        self.l1, self.l2 = self.activity_regularizer.l1, self.activity_regularizer.l2

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}


class AddLoss(Layer):
    """What ``model.add_loss(symbolic_tensor)`` inserts into a functional model (TF 2.4's
    ``AddLoss``): passes its input through and adds it to the model's losses on every call."""

    def __init__(self, unconditional=False, **kwargs):
        super().__init__(**kwargs)
        self.unconditional = unconditional

    def call(self, inputs):
        self.add_loss(inputs)
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "unconditional": self.unconditional}


class AddMetric(Layer):
    """What ``model.add_metric(symbolic_tensor, name)`` inserts into a functional model (TF
    2.4's ``AddMetric``): passes its input through and reports its mean as ``metric_name``."""

    def __init__(self, aggregation=None, metric_name=None, **kwargs):
        super().__init__(**kwargs)
        self.aggregation = aggregation
        self.metric_name = metric_name

    def call(self, inputs):
        self.add_metric(inputs, name=self.metric_name, aggregation=self.aggregation)
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "aggregation": self.aggregation,
                "metric_name": self.metric_name}
