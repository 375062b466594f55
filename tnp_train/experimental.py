"""``tt.experimental`` (TF 2.4's ``tf.keras.experimental``): the cosine learning-rate schedules,
the premade ``LinearModel`` and ``WideDeepModel``, and ``PeepholeLSTMCell``.

``SequenceFeatures`` (feature columns) is out of scope: tnp_train has no feature columns.
"""
from __future__ import annotations

import math

from . import activations as _activations
from .autodiff import GradientTape
from .layers import Dense, LSTMCell
from .layers.core import set_weight_options, weight_options_config
from .models import Model
from .optimizers.schedules import CosineDecay, CosineDecayRestarts, _Formula, _positive
from .utils.random import get_rng

__all__ = ["CosineDecay", "CosineDecayRestarts", "LinearCosineDecay", "NoisyLinearCosineDecay",
           "LinearModel", "WideDeepModel", "PeepholeLSTMCell"]


class LinearCosineDecay(_Formula):
    """Mirrors ``tf.keras.experimental.LinearCosineDecay(initial_learning_rate, decay_steps,
    num_periods=0.5, alpha=0.0, beta=0.001, name=None)`` (TF 2.4): with ``s = min(step,
    decay_steps)``, ``lr0 * ((alpha + (D - s) / D) * 0.5 * (1 + cos(2 pi num_periods s / D)) +
    beta)``."""

    def __init__(self, initial_learning_rate, decay_steps, num_periods=0.5, alpha=0.0,
                 beta=0.001, name=None):
        _positive(type(self).__name__, decay_steps=decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.num_periods = num_periods
        self.alpha = alpha
        self.beta = beta
        self.name = name

    def _parts(self, s):
        d = float(self.decay_steps)
        s = min(s, d)
        linear = (d - s) / d
        cosine = 0.5 * (1.0 + math.cos(math.pi * 2.0 * float(self.num_periods) * s / d))
        return s, linear, cosine

    def _rate(self, s):
        _, linear, cosine = self._parts(s)
        return float(self.initial_learning_rate) * ((self.alpha + linear) * cosine + self.beta)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "num_periods": self.num_periods,
                "alpha": self.alpha, "beta": self.beta, "name": self.name}


class NoisyLinearCosineDecay(LinearCosineDecay):
    """Mirrors ``tf.keras.experimental.NoisyLinearCosineDecay(initial_learning_rate,
    decay_steps, initial_variance=1.0, variance_decay=0.55, num_periods=0.5, alpha=0.0,
    beta=0.001, name=None)`` (TF 2.4): the linear part gets Gaussian noise of variance
    ``initial_variance / (1 + s) ** variance_decay`` at each call (drawn from
    ``tt.utils.set_random_seed``'s stream, so a seeded run repeats)."""

    def __init__(self, initial_learning_rate, decay_steps, initial_variance=1.0,
                 variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001, name=None):
        super().__init__(initial_learning_rate, decay_steps, num_periods, alpha, beta, name)
        self.initial_variance = initial_variance
        self.variance_decay = variance_decay

    def _rate(self, s):
        s, linear, cosine = self._parts(s)
        variance = float(self.initial_variance) / (1.0 + s) ** float(self.variance_decay)
        noisy = linear + float(get_rng().normal(0.0, math.sqrt(variance)))
        return float(self.initial_learning_rate) * ((self.alpha + noisy) * cosine + self.beta)

    def get_config(self):
        return {**super().get_config(), "initial_variance": self.initial_variance,
                "variance_decay": self.variance_decay}


class LinearModel(Model):
    """Mirrors ``tf.keras.experimental.LinearModel(units=1, activation=None, use_bias=True,
    kernel_initializer="zeros", bias_initializer="zeros", kernel_regularizer=None,
    bias_regularizer=None, **kwargs)`` (TF 2.4): ``activation(sum_i x_i @ W_i + b)``, one
    kernel per input (a dict of inputs: one per key, in sorted key order)."""

    def __init__(self, units=1, activation=None, use_bias=True, kernel_initializer="zeros",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = units
        set_weight_options(self, activation=activation, use_bias=use_bias,
                           kernel_initializer=kernel_initializer,
                           bias_initializer=bias_initializer,
                           kernel_regularizer=kernel_regularizer,
                           bias_regularizer=bias_regularizer)

    def _dense(self, name=None):
        kw = {"name": name} if name is not None else {}
        return Dense(self.units, use_bias=False, kernel_initializer=self.kernel_initializer,
                     kernel_regularizer=self.kernel_regularizer, dtype=self.dtype_policy, **kw)

    def build(self, input_shape):
        if isinstance(input_shape, dict):
            self._names = sorted(input_shape)
            shapes = [input_shape[n] for n in self._names]
            layers = [self._dense(n) for n in self._names]
        elif isinstance(input_shape, list) or (
                isinstance(input_shape, tuple) and input_shape and
                isinstance(input_shape[0], (tuple, list))):
            self._names = None
            shapes = list(input_shape)
            layers = [self._dense() for _ in shapes]
        else:
            self._names = None
            shapes, layers = [input_shape], [self._dense()]
        for layer, shape in zip(layers, shapes):
            layer.build(tuple(shape))
        self.dense_layers = layers
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None
        self.built = True

    def call(self, inputs):
        if isinstance(inputs, dict):
            missing = sorted(set(self._names or ()) - set(inputs))
            if missing or self._names is None:
                raise ValueError(f"{self.name}: The input dictionary does not match the "
                                 f"structure expected by the model: expected keys "
                                 f"{self._names}, got {sorted(inputs)}")
            inputs = [inputs[n] for n in self._names]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.dense_layers):
            raise ValueError(f"{self.name}: expected {len(self.dense_layers)} input(s), got "
                             f"{len(inputs)}")
        result = None
        for x, layer in zip(inputs, self.dense_layers):
            out = layer(x)
            result = out if result is None else result + out
        if self.bias is not None:
            result = result + self.bias
        return self.activation(result) if self.activation is not None else result

    def get_config(self):
        return {"units": self.units, "name": self.name, **weight_options_config(
            self, "activation", "use_bias", "kernel_initializer", "bias_initializer",
            "kernel_regularizer", "bias_regularizer")}


class WideDeepModel(Model):
    """Mirrors ``tf.keras.experimental.WideDeepModel(linear_model, dnn_model,
    activation=None, **kwargs)`` (TF 2.4): ``activation(linear_model(x_linear) +
    dnn_model(x_dnn))``, the inputs a pair ``[x_linear, x_dnn]`` or one input for both.
    ``compile(optimizer=[linear_optimizer, dnn_optimizer], ...)`` updates each part with its
    own optimizer (one optimizer updates both)."""

    def __init__(self, linear_model, dnn_model, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.linear_model = linear_model
        self.dnn_model = dnn_model
        self.activation = _activations.get(activation)

    def call(self, inputs, training=None):
        if isinstance(inputs, (list, tuple)) and len(inputs) == 2:
            linear_in, dnn_in = inputs
        else:
            linear_in = dnn_in = inputs
        out = self.linear_model(linear_in) + self.dnn_model(dnn_in, training=training)
        return self.activation(out) if self.activation is not None else out

    def compile(self, optimizer="rmsprop", *args, **kwargs):
        if not isinstance(optimizer, (list, tuple)):
            return super().compile(optimizer, *args, **kwargs)
        if len(optimizer) != 2:
            raise ValueError(f"{self.name}: compile takes one optimizer, or two (linear, dnn); "
                             f"got {len(optimizer)}")
        super().compile(optimizer[0], *args, **kwargs)
        first = self.optimizer
        super().compile(optimizer[1], *args, **kwargs)
        self.__dict__["optimizer"] = [first, self.optimizer]
        self._compile_config["optimizer"] = list(optimizer)

    def train_step(self, data):
        if not isinstance(self.optimizer, list):
            return super().train_step(data)
        from .trainers.data_adapter import unpack_x_y_sample_weight
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        linear_vars = self.linear_model.trainable_variables
        dnn_vars = self.dnn_model.trainable_variables
        grads = tape.gradient(loss, linear_vars + dnn_vars)
        n = len(linear_vars)
        self.optimizer[0].apply_gradients(zip(grads[:n], linear_vars))
        self.optimizer[1].apply_gradients(zip(grads[n:], dnn_vars))
        return self._update_metrics(y, y_pred, sample_weight)

    def get_config(self):
        from .layers import serialize
        return {"linear_model": serialize(self.linear_model),
                "dnn_model": serialize(self.dnn_model),
                "activation": _activations.serialize(self.activation), "name": self.name}


class PeepholeLSTMCell(LSTMCell):
    """Mirrors ``tf.keras.experimental.PeepholeLSTMCell(units, ...)`` (TF 2.4: the
    arguments of ``LSTMCell``): an LSTM cell whose input and forget gates also see the previous
    cell state, and whose output gate sees the new one, through diagonal weights
    (``input_gate_peephole_weights``, ``forget_gate_peephole_weights``,
    ``output_gate_peephole_weights``, shape ``(units,)``, made with the kernel initializer):
    ``i = ra(z_i + w_i c_prev)``, ``f = ra(z_f + w_f c_prev)``, ``c = f c_prev + i a(z_c)``,
    ``o = ra(z_o + w_o c)``, ``h = o a(c)`` (Gers & Schmidhuber)."""

    def build(self, input_shape):
        super().build(input_shape)
        for gate in ("input", "forget", "output"):
            setattr(self, f"{gate}_gate_peephole_weights",
                    self.add_weight(f"{gate}_gate_peephole_weights", (self.units,),
                                    initializer=self.kernel_initializer))

    def call(self, inputs, states, training=None):
        z, c_prev = self._preactivations(inputs, states, training)
        u = self.units
        ra, a = self.recurrent_activation, self.activation
        i = ra(z[:, :u] + self.input_gate_peephole_weights * c_prev)
        f = ra(z[:, u:2 * u] + self.forget_gate_peephole_weights * c_prev)
        c = f * c_prev + i * a(z[:, 2 * u:3 * u])
        o = ra(z[:, 3 * u:] + self.output_gate_peephole_weights * c)
        h = o * a(c)
        return h, [h, c]

