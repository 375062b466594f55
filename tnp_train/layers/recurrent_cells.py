"""The recurrent cells (TF 2.4 ``tf.keras.layers``): ``SimpleRNNCell``, ``LSTMCell``,
``GRUCell``, ``AbstractRNNCell``, ``StackedRNNCells``, and the helpers they share with the
recurrent layers of :mod:`.recurrent` (which re-exports the cells). Weights and gate orders
are described there."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import backend_array as _backend, wrap

from .. import activations as _activations
from .. import initializers as _initializers
from ..ops.recurrent import _ACTS, _on
from ..utils.random import keep_mask
from ._common import add_option_weight, device_of as _device_of, positive_int
from .base import Layer

# ---------------------------------------------------------------------------- helpers
def _fusable_name(fn):
    """The name of a built-in activation the fused kernels know, else None."""
    for name in _ACTS:
        try:
            if _activations.get(name) is fn:
                return name
        except ValueError:
            continue
    return None


def _ser_act(fn):
    name = _fusable_name(fn)
    return name if name is not None else _activations.serialize(fn)


class _UnitForgetBias:
    """LSTM bias initializer with ``unit_forget_bias``: the forget gate's part is ones."""

    def __init__(self, base, units):
        self.base, self.units = base, units

    def __call__(self, shape, dtype="float32"):
        u = self.units
        init = _initializers.get(self.base)
        first = init((u,), dtype=dtype)
        first = first if isinstance(first, tnp.ndarray) else tnp.asarray(first)
        dev, xp = _device_of(first)
        parts = [_backend(first), xp.ones((u,), dtype=dtype), _on(init((2 * u,), dtype=dtype), dev, xp,
                                                            strict=False)]
        return wrap(xp.concatenate(parts), dev)


def _dropout_mask(shape, rate, dtype, dev):
    """A scaled keep mask, a tnp array on ``dev``: drawn on the host from the seeded NumPy
    Generator (in a compiled function, anew at every call), moved to ``dev`` as booleans and
    scaled there."""
    keep = 1.0 - rate
    k = keep_mask(shape, rate)
    k = k.to_device(dev) if isinstance(k, tnp.ndarray) else tnp.asarray(k, device=dev)
    return k.astype(dtype) / tnp.asarray(keep, dtype=dtype, device=dev)


# ---------------------------------------------------------------------------- cells
# the arguments every built-in cell (and its layer) takes, in _CellBase's order
_CELL_ARGS = ("units", "activation", "use_bias", "kernel_initializer", "recurrent_initializer",
              "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
              "bias_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint",
              "dropout", "recurrent_dropout")
_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
             "time_major")


def _pick(args, names):
    """The entries ``names`` of ``args`` (a constructor's ``locals()``)."""
    return {k: args[k] for k in names}


class _CellBase(Layer):
    """Shared pieces of the built-in cells: dropout masks and the fused-kernel description."""

    _kind = None
    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        units = positive_int(units, type(self).__name__, "units")
        for what, r in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(r) < 1.0:
                raise ValueError(f"{type(self).__name__}: {what} must be in [0, 1), got {r!r}")
        self.units = units
        self.activation = _activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.recurrent_regularizer = recurrent_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.recurrent_constraint = recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self._dp_mask = None
        self._rdp_mask = None

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _build_weights(self, input_dim, bias_shape, bias_init):
        G = self._gates * self.units
        self.kernel = add_option_weight(self, "kernel", (input_dim, G))
        self.recurrent_kernel = add_option_weight(self, "recurrent_kernel", (self.units, G),
                                                  "recurrent")
        self.bias = add_option_weight(self, "bias", bias_shape, initializer=bias_init) \
            if self.use_bias else None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if input_shape[-1] is None:
            raise ValueError(f"{self.name}: the last dimension of the inputs must be known, got "
                             f"shape {input_shape}")
        self._build_weights(int(input_shape[-1]), *self._bias_spec())
        super().build(input_shape)

    def _bias_spec(self):
        """The bias's shape and initializer."""
        return (self._gates * self.units,), self.bias_initializer

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if batch_size is None:
            batch_size = inputs.shape[0]
        dtype = dtype or (inputs.dtype if inputs is not None else self.compute_dtype)
        n = len(self._state_list())
        out = [tnp.zeros((batch_size, self.units), dtype=dtype) for _ in range(n)]
        return out if n > 1 else out[0]

    def _state_list(self):
        return [self.units]

    # dropout masks are drawn once per sequence (the RNN layer sets them) or per call
    def _masks(self, inputs, h, training):
        dp, rdp = self._dp_mask, self._rdp_mask
        if training:
            dt = _np.dtype(inputs.dtype)
            dev, xp = _device_of(inputs)
            if dp is None and self.dropout > 0:
                dp = _dropout_mask(tuple(inputs.shape), self.dropout, dt, dev)
            if rdp is None and self.recurrent_dropout > 0:
                rdp = _dropout_mask(tuple(h.shape), self.recurrent_dropout, dt, dev)
        else:
            dp = rdp = None
        return dp, rdp

    def _fused_spec(self):
        """The arguments of ``fused_rnn`` if this cell can run fused, else None."""
        if type(self) not in (SimpleRNNCell, LSTMCell, GRUCell):
            return None
        act = _fusable_name(self.activation)
        ract = _fusable_name(getattr(self, "recurrent_activation", _activations.get("sigmoid")))
        if act is None or ract is None:
            return None
        return {"activation": act, "recurrent_activation": ract,
                "reset_after": getattr(self, "reset_after", True)}

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": _ser_act(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": self.kernel_initializer,
                "recurrent_initializer": self.recurrent_initializer,
                "bias_initializer": self.bias_initializer,
                "kernel_regularizer": self.kernel_regularizer,
                "recurrent_regularizer": self.recurrent_regularizer,
                "bias_regularizer": self.bias_regularizer,
                "kernel_constraint": self.kernel_constraint,
                "recurrent_constraint": self.recurrent_constraint,
                "bias_constraint": self.bias_constraint,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout}

    def compute_output_shape(self, input_shape):
        return (tuple(input_shape)[0], self.units)


def _states_list(states):
    if isinstance(states, (list, tuple)):
        return list(states)
    return [states]


class SimpleRNNCell(_CellBase):
    """One step of a fully-connected RNN: ``h = activation(x @ kernel + h_prev @ recurrent_kernel
    + bias)``; mirrors ``tf.keras.layers.SimpleRNNCell(units, activation="tanh", use_bias=True,
    kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
    bias_initializer="zeros", ..., dropout=0., recurrent_dropout=0.)``."""

    _kind = "rnn"
    _gates = 1

    def call(self, inputs, states, training=None):
        h_prev = _states_list(states)[0]
        dp, rdp = self._masks(inputs, h_prev, training)
        x = inputs * dp if dp is not None else inputs
        hr = h_prev * rdp if rdp is not None else h_prev
        z = x @ self.kernel
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z + hr @ self.recurrent_kernel)
        return h, [h]


class LSTMCell(_CellBase):
    """One LSTM step (gates i, f, c, o in Keras's column order); mirrors
    ``tf.keras.layers.LSTMCell(units, activation="tanh", recurrent_activation="sigmoid",
    use_bias=True, kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
    bias_initializer="zeros", unit_forget_bias=True, ..., dropout=0., recurrent_dropout=0.,
    implementation=2)``. States are ``[h, c]``."""

    _kind = "lstm"
    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, implementation=2, **kwargs):
        super().__init__(**_pick(locals(), _CELL_ARGS), **kwargs)
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.implementation = implementation

    @property
    def state_size(self):
        return [self.units, self.units]

    def _state_list(self):
        return [self.units, self.units]

    def _bias_spec(self):
        init = _UnitForgetBias(self.bias_initializer, self.units) if self.unit_forget_bias \
            else self.bias_initializer
        return (4 * self.units,), init

    def _preactivations(self, inputs, states, training):
        """``(z, c_prev)``: the four gates' pre-activations (dropout applied) and the previous
        cell state."""
        h_prev, c_prev = _states_list(states)[:2]
        dp, rdp = self._masks(inputs, h_prev, training)
        x = inputs * dp if dp is not None else inputs
        hr = h_prev * rdp if rdp is not None else h_prev
        z = x @ self.kernel + hr @ self.recurrent_kernel
        if self.bias is not None:
            z = z + self.bias
        return z, c_prev

    def call(self, inputs, states, training=None):
        z, c_prev = self._preactivations(inputs, states, training)
        u = self.units
        ra, a = self.recurrent_activation, self.activation
        i, f = ra(z[:, :u]), ra(z[:, u:2 * u])
        g, o = a(z[:, 2 * u:3 * u]), ra(z[:, 3 * u:])
        c = f * c_prev + i * g
        h = o * a(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": _ser_act(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias, "implementation": self.implementation}


class GRUCell(_CellBase):
    """One GRU step (gates z, r, h); mirrors ``tf.keras.layers.GRUCell(units, activation="tanh",
    recurrent_activation="sigmoid", use_bias=True, ..., dropout=0., recurrent_dropout=0.,
    implementation=2, reset_after=True)`` (TF 2.x default). With ``reset_after`` the bias is
    (2, 3*units): the input bias and the recurrent bias, and the reset gate multiplies
    ``h_prev @ recurrent_kernel_h + recurrent_bias_h``; without it the reset gate multiplies
    ``h_prev`` before that product."""

    _kind = "gru"
    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, implementation=2,
                 reset_after=True, **kwargs):
        super().__init__(**_pick(locals(), _CELL_ARGS), **kwargs)
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.implementation = implementation
        self.reset_after = bool(reset_after)

    def _bias_spec(self):
        shape = (2, 3 * self.units) if self.reset_after else (3 * self.units,)
        return shape, self.bias_initializer

    def call(self, inputs, states, training=None):
        h_prev = _states_list(states)[0]
        dp, rdp = self._masks(inputs, h_prev, training)
        x = inputs * dp if dp is not None else inputs
        hr = h_prev * rdp if rdp is not None else h_prev
        u = self.units
        ra, a = self.recurrent_activation, self.activation
        R = self.recurrent_kernel
        mx = x @ self.kernel
        if self.reset_after:
            inner = hr @ R
            if self.bias is not None:
                mx = mx + self.bias[0]
                inner = inner + self.bias[1]
            z = ra(mx[:, :u] + inner[:, :u])
            r = ra(mx[:, u:2 * u] + inner[:, u:2 * u])
            hh = a(mx[:, 2 * u:] + r * inner[:, 2 * u:])
        else:
            if self.bias is not None:
                mx = mx + self.bias
            inner = hr @ R[:, :2 * u]
            z = ra(mx[:, :u] + inner[:, :u])
            r = ra(mx[:, u:2 * u] + inner[:, u:])
            hh = a(mx[:, 2 * u:] + (r * hr) @ R[:, 2 * u:])
        h = z * h_prev + (1 - z) * hh
        return h, [h]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": _ser_act(self.recurrent_activation),
                "implementation": self.implementation, "reset_after": self.reset_after}


# ---------------------------------------------------------------------------- RNN layers
def _state_sizes(cell):
    s = cell.state_size
    return [int(v) for v in s] if isinstance(s, (list, tuple)) else [int(s)]


def _output_size(cell):
    s = getattr(cell, "output_size", None)
    return int(s) if s is not None else _state_sizes(cell)[0]


class AbstractRNNCell(Layer):
    """Mirrors ``tf.keras.layers.AbstractRNNCell``: the base of a cell written by hand, whose
    subclass gives ``state_size``, ``output_size`` and ``call(inputs, states)``; a cell that
    does not raises NotImplementedError naming what it lacks, as TF's does."""

    def call(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  f"implement call(inputs, states)")

    @property
    def state_size(self):
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  f"define state_size")

    @property
    def output_size(self):
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  f"define output_size")

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        sizes = _state_sizes(self)
        return [tnp.zeros((batch_size, n), dtype=dtype) for n in sizes]


class StackedRNNCells(Layer):
    """Mirrors ``tf.keras.layers.StackedRNNCells(cells)``: the cells applied one after the
    other at each time step, each one's output the next one's input; the states are every
    cell's states in order (``state_size`` flattened), the output the last cell's.
    ``RNN([cell, cell])`` makes one."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        cells = list(cells)
        if not cells:
            raise ValueError("StackedRNNCells: expected at least one cell")
        for c in cells:
            if not hasattr(c, "call") or not hasattr(c, "state_size"):
                raise ValueError(f"StackedRNNCells: all cells must have a `call` method and a "
                                 f"`state_size` attribute; received cells: {cells}")
        self.cells = cells

    @property
    def state_size(self):
        return [n for c in self.cells for n in _state_sizes(c)]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def build(self, input_shape):
        shape = tuple(input_shape)
        for c in self.cells:
            if not getattr(c, "built", False):
                if hasattr(c, "_maybe_build"):
                    c._maybe_build(shape)
                else:
                    c.build(shape)
            shape = shape[:-1] + (_output_size(c),)
        super().build(input_shape)

    def call(self, inputs, states, training=None):
        states = _states_list(states)
        out, new_states, i = inputs, [], 0
        for c in self.cells:
            n = len(_state_sizes(c))
            own = states[i:i + n]
            i += n
            out, st = c(out, own, training=training)
            new_states.extend(_states_list(st))
        return out, new_states

    def _group(self, flat):
        """Flat states regrouped per cell: a list for a cell with several, else the state."""
        out, i = [], 0
        for c in self.cells:
            n = len(_state_sizes(c))
            out.append(list(flat[i:i + n]) if n > 1 else flat[i])
            i += n
        return out

    def get_config(self):
        return {**super().get_config(),
                "cells": [{"class_name": type(c).__name__, "config": c.get_config()}
                          for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["cells"] = [_layer_from_dict(c) if isinstance(c, dict) else c
                           for c in config.pop("cells")]
        return cls(**config)


def _find_layer_class(name):
    todo = [Layer]
    while todo:
        k = todo.pop()
        if k.__name__ == name:
            return k
        todo.extend(k.__subclasses__())
    return None


def _layer_from_dict(d):
    """A layer from Keras's ``{"class_name", "config"}`` (any imported Layer subclass)."""
    klass = _find_layer_class(d["class_name"])
    if klass is None:
        raise ValueError(f"Unknown layer class {d['class_name']!r}: import it before from_config")
    return klass.from_config(d["config"])
