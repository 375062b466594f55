"""Recurrent layers: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, ``RNN``, ``SimpleRNN``,
``LSTM``, ``GRU`` and ``Bidirectional`` (TF 2.4 ``tf.keras.layers`` signatures and defaults).

Weights are Keras's: ``kernel`` (input_dim, G*units), ``recurrent_kernel`` (units, G*units),
``bias`` (G*units,) — or (2, 3*units) for a GRU with ``reset_after=True`` (input bias, then
recurrent bias) — with gates ``i, f, c, o`` (LSTM) and ``z, r, h`` (GRU).

Speed: when a layer's cell is one of the built-in cells with built-in activations, a whole
sequence is ONE tape node: the forward loop runs with the array module of the inputs' device
(``xp``: NumPy on the CPU, CuPy on a GPU; nothing leaves the device) on time-major (batch,
units) matrices (one GEMM for the input projection of every step, one GEMM per step for the
recurrent part) and the backward pass is a hand-written backpropagation through time (again one GEMM per step, plus
one GEMM each for the kernel, recurrent-kernel and input gradients). Any other cell (a user's
cell, or custom activations) runs step by step through ``cell.call`` on the tape.

Masking (a ``mask=`` argument, e.g. from ``Embedding(mask_zero=True)``): at a masked step the
states keep their previous values and the output repeats the previous step's output (zeros
before the first unmasked step), as Keras's ``backend.rnn`` does.

The fused kernels (``fused_rnn``) are in :mod:`tnp_train.ops.recurrent`, the cells in
:mod:`.recurrent_cells`; the layers are here.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import array_module, device_of as _tnp_device, is_floating, wrap
from tnp.extend import tracing as _tracing

from ..ops.recurrent import (  # noqa: F401  (the kernels' names stay importable from here)
    _ACTS, _fused_backward, _fused_forward, _on, _sigmoid, fused_rnn,
)
from ._common import device_of as _device_of
from ..autodiff import paused as _paused, stop_gradient as _stop_gradient
from .base import Layer, running_on_placeholders

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU",
           "Bidirectional", "AbstractRNNCell", "StackedRNNCells"]


from .recurrent_cells import (  # noqa: F401  (the cells stay importable from here)
    SimpleRNNCell, LSTMCell, GRUCell, AbstractRNNCell, StackedRNNCells, _dropout_mask,
    _CELL_ARGS, _RNN_ARGS, _pick, _CellBase, _states_list, _state_sizes, _output_size, _ser_act,
    _layer_from_dict, _UnitForgetBias,
)


class RNN(Layer):
    """Runs a cell over the time axis; mirrors ``tf.keras.layers.RNN(cell,
    return_sequences=False, return_state=False, go_backwards=False, stateful=False,
    unroll=False, time_major=False)``. ``call(inputs, mask=None, training=None,
    initial_state=None)``; ``inputs`` may also be ``[x, *initial_states]``.

    The cell follows Keras's protocol: ``state_size`` (int or list), ``call(inputs, states,
    training=None) -> (output, new_states)``. The built-in cells run fused (one tape node for
    the sequence); other cells step by step on the tape. ``unroll`` has no effect (the loop is
    the same either way).

    ``stateful=True``: each batch starts from the final states of the previous one (row i of
    a batch continues row i of the last), until ``reset_states()``; ``states`` holds them.
    The batch size must stay the same (give it: ``tt.Input(shape, batch_size=...)``), and no
    gradient flows from one batch into the next, as in Keras. Not under a strategy of
    several replicas."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        super().__init__(**kwargs)
        if cell is not None:
            if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
                raise ValueError(f"RNN: the cell {cell!r} needs a call method and a state_size "
                                 f"attribute")
            self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._carried = None        # a stateful layer's states: the last batch's final states
        self.unroll = bool(unroll)
        self.time_major = bool(time_major)
        self.supports_masking = True

    # -- inputs given as [x, *initial_state]
    def __call__(self, *args, **kwargs):
        if args and isinstance(args[0], (list, tuple)) and len(args[0]) > 1:
            inputs = list(args[0])
            if kwargs.get("initial_state") is not None:
                raise ValueError(f"{self.name}: initial states given both in the inputs list and "
                                 f"as initial_state=")
            kwargs["initial_state"] = inputs[1:]
            args = (inputs[0],) + args[1:]
        elif args and isinstance(args[0], (list, tuple)) and len(args[0]) == 1:
            args = (args[0][0],) + args[1:]
        return super().__call__(*args, **kwargs)

    def build(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        input_shape = tuple(input_shape)
        if len(input_shape) < 3:
            raise ValueError(f"{self.name}: expected inputs of rank 3 (batch, time, features), "
                             f"got shape {input_shape}")
        if self.stateful and input_shape[1 if self.time_major else 0] is None:
            raise ValueError(f"{self.name}: if a RNN is stateful, it needs to know its batch "
                             f"size. Specify the batch size of your input tensors (input shape "
                             f"{input_shape}): `tt.Input(shape, batch_size=...)`, or "
                             f"`batch_input_shape=` on the first layer")
        step = (input_shape[1],) + tuple(input_shape[2:]) if self.time_major else \
            (input_shape[0],) + tuple(input_shape[2:])
        if not getattr(self.cell, "built", False):
            if hasattr(self.cell, "_maybe_build"):
                self.cell._maybe_build(step)
            else:
                self.cell.build(step)
        super().build(input_shape)

    def _out_size(self):
        return _output_size(self.cell)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        s = tuple(input_shape)
        b, t = (s[1], s[0]) if self.time_major else (s[0], s[1])
        u = self._out_size()
        if self.return_sequences:
            out = (t, b, u) if self.time_major else (b, t, u)
        else:
            out = (b, u)
        if self.return_state:
            return [out] + [(b, n) for n in _state_sizes(self.cell)]
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(_state_sizes(self.cell))
        return out

    def _given_states(self, states, what):
        """``states`` as one flat list, one per state of the cell (a stack's given per cell,
        as TF takes them), and the states' sizes."""
        sizes = _state_sizes(self.cell)
        given = _states_list(states)
        if isinstance(self.cell, StackedRNNCells):
            given = [t for st in given for t in _states_list(st)]
        if len(given) != len(sizes):
            raise ValueError(f"{self.name}: expected {len(sizes)} {what}(s) (state_size "
                             f"{self.cell.state_size}), got {len(given)}")
        return given, sizes

    def _initial_states(self, x, initial_state, batch):
        if initial_state is None:
            return None
        states, sizes = self._given_states(initial_state, "initial state")
        out = []
        for s, n in zip(states, sizes):
            s = s if isinstance(s, tnp.ndarray) else tnp.asarray(s)
            if tuple(s.shape) != (batch, n):
                raise ValueError(f"{self.name}: an initial state has shape {tuple(s.shape)}, "
                                 f"expected {(batch, n)}")
            if s.dtype != x.dtype and is_floating(s.dtype):
                s = s.astype(x.dtype)
            out.append(s)
        return out

    def call(self, inputs, mask=None, training=None, initial_state=None):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        if x.ndim != 3:
            raise ValueError(f"{self.name}: expected inputs of rank 3 (batch, time, features), "
                             f"got shape {tuple(x.shape)}")
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None:
            mask = mask if isinstance(mask, tnp.ndarray) else tnp.asarray(mask)
            if _tnp_device(mask) is not _tnp_device(x):
                mask = mask.to_device(_tnp_device(x))
            mask = mask.astype(bool)
            if tuple(mask.shape) != tuple(x.shape[:2]):
                raise ValueError(f"{self.name}: the mask has shape {tuple(mask.shape)}, expected "
                                 f"{tuple(x.shape[:2])} for inputs of shape {tuple(x.shape)}")
        B = x.shape[1] if self.time_major else x.shape[0]
        T = x.shape[0] if self.time_major else x.shape[1]
        if T == 0:
            raise ValueError(f"{self.name}: the inputs have no time steps (shape {tuple(x.shape)})")
        states0 = self._initial_states(x, initial_state, B)
        if self.stateful:
            if initial_state is None:
                states0 = self._stateful_states(x, B)
            check_stateful_replicas(self)
        cell = self.cell
        spec = cell._fused_spec() if hasattr(cell, "_fused_spec") else None
        if spec is not None:
            outs = self._call_fused(cell, spec, x, mask, training, states0, B)
        else:
            outs = self._call_steps(cell, x, mask, training, states0, B, T)
        y, states = outs[0], list(outs[1:])
        if self.stateful and not running_on_placeholders():
            # kept without their history: the next batch's gradient stops here, as in Keras
            self._carried = carry_states(self._carried, states)
        if self.return_state:
            if isinstance(cell, StackedRNNCells):
                states = cell._group(states)      # per cell, as TF returns them
            return [y] + states
        return y

    def _call_fused(self, cell, spec, x, mask, training, states0, B):
        dt = _np.dtype(x.dtype)
        dev, xp = _device_of(x)
        rmask = None
        if training and cell.dropout > 0:
            D = x.shape[-1]
            dp = _dropout_mask((B, D), cell.dropout, dt, dev)
            x = x * (dp[None] if self.time_major else dp[:, None, :])
        if training and cell.recurrent_dropout > 0:
            rmask = _dropout_mask((B, cell.units), cell.recurrent_dropout, dt, dev)
        h0 = c0 = None
        if states0 is not None:
            h0 = states0[0]
            c0 = states0[1] if len(states0) > 1 else None
        return fused_rnn(cell._kind, x, cell.kernel, cell.recurrent_kernel, cell.bias, h0, c0,
                         mask=mask, rmask=rmask, go_backwards=self.go_backwards,
                         return_sequences=self.return_sequences, time_major=self.time_major,
                         **spec)

    def _call_steps(self, cell, x, mask, training, states0, B, T):
        sizes = _state_sizes(cell)
        if states0 is None:
            if hasattr(cell, "get_initial_state"):
                st = cell.get_initial_state(inputs=None, batch_size=B, dtype=x.dtype)
                states = _states_list(st)
            else:
                states = [tnp.zeros((B, n), dtype=x.dtype) for n in sizes]
        else:
            states = list(states0)
        # the built-in cells' dropout masks, one per sequence (each cell of a stack gets its
        # own, sized by its input: the previous cell's output)
        masked = []
        D = x.shape[-1]
        dt = _np.dtype(x.dtype)
        dev, xp = _device_of(x)
        for c in (cell.cells if isinstance(cell, StackedRNNCells) else [cell]):
            if isinstance(c, _CellBase):
                c._dp_mask = _dropout_mask((B, D), c.dropout, dt, dev) \
                    if training and c.dropout > 0 else None
                c._rdp_mask = _dropout_mask((B, c.units), c.recurrent_dropout, dt, dev) \
                    if training and c.recurrent_dropout > 0 else None
                masked.append(c)
            D = _output_size(c)
        order = range(T - 1, -1, -1) if self.go_backwards else range(T)
        outputs = []
        prev = None
        try:
            for t in order:
                xt = x[t] if self.time_major else x[:, t]
                out, new_states = cell(xt, states, training=training)
                new_states = _states_list(new_states)
                if mask is not None:
                    mt = mask[t] if self.time_major else mask[:, t]
                    m = mt[:, None]
                    if prev is None:
                        prev = tnp.zeros(tuple(out.shape), dtype=out.dtype)
                    out = tnp.where(m, out, prev)
                    new_states = [tnp.where(m, n, s) for n, s in zip(new_states, states)]
                prev = out
                states = new_states
                outputs.append(out)
        finally:
            for c in masked:
                c._dp_mask = c._rdp_mask = None
        if self.return_sequences:
            y = tnp.stack(outputs, axis=0 if self.time_major else 1)
        else:
            y = outputs[-1]
        return [y] + states

    # -- stateful
    @property
    def states(self):
        """The states a stateful layer carries to its next batch (None before its first
        batch; zeros after ``reset_states()``); a list of arrays of shape (batch, size)."""
        return None if self._carried is None else list(self._carried)

    def _stateful_states(self, x, batch):
        if self._carried is None:
            if running_on_placeholders():
                return None      # zeros, as for a layer that is not stateful
            # the first batch starts from zeros, in arrays made now (outside any trace: a
            # compiled step reads and writes these at every call)
            self._carried = [carried_zeros((batch, n), x.dtype, _tnp_device(x))
                             for n in _state_sizes(self.cell)]
        if tuple(self._carried[0].shape)[0] != batch:
            raise ValueError(f"{self.name}: a stateful RNN keeps the batch size it started "
                             f"with ({tuple(self._carried[0].shape)[0]}), got a batch of "
                             f"{batch}; call reset_states() to start over with another size")
        # copies: the carried arrays are overwritten after the call, and the backward pass
        # reads the initial states
        return [st.copy() if st.dtype == x.dtype else st.astype(x.dtype)
                for st in self._carried]

    def reset_states(self, states=None):
        """Set the carried states to zeros, or to ``states`` (one array per state, each of
        shape (batch, size)); ``Layer.reset_states`` of Keras."""
        if not self.stateful:
            raise AttributeError(f"{self.name}: reset_states() is for a stateful layer "
                                 f"(stateful=True)")
        sizes = _state_sizes(self.cell)
        if states is None:
            batch = None
            if self._carried is not None:
                batch = tuple(self._carried[0].shape)[0]
            elif self._batch_input_shape is not None and self._batch_input_shape[0]:
                batch = self._batch_input_shape[0]
            if batch is None:
                self._carried = None     # the first batch starts from zeros
                return
            dtype = self._carried[0].dtype if self._carried is not None else self.compute_dtype
            self._carried = carry_states(self._carried, [tnp.zeros((batch, n), dtype=dtype)
                                                         for n in sizes])
            return
        given, sizes = self._given_states(states, "state")
        out = []
        for st, n in zip(given, sizes):
            st = tnp.asarray(_np.asarray(st)) if not isinstance(st, tnp.ndarray) else st
            if st.ndim != 2 or st.shape[1] != n:
                raise ValueError(f"{self.name}: a state has shape {tuple(st.shape)}, expected "
                                 f"(batch, {n})")
            out.append(_stop_gradient(st))
        if len({tuple(st.shape)[0] for st in out}) != 1:
            raise ValueError(f"{self.name}: the states' batch sizes differ: "
                             f"{[tuple(st.shape) for st in out]}")
        self._carried = carry_states(self._carried, out)

    def get_config(self):
        cfg = {**super().get_config(), "return_sequences": self.return_sequences,
               "return_state": self.return_state, "go_backwards": self.go_backwards,
               "stateful": self.stateful, "unroll": self.unroll, "time_major": self.time_major}
        if type(self) is RNN:
            cc = self.cell.get_config()
            cfg["cell"] = {"class_name": type(self.cell).__name__, "config": cc}
        return cfg

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        cell = config.pop("cell", None)
        if isinstance(cell, dict):
            cell = _layer_from_dict(cell)
        config["cell"] = cell
        return Layer.from_config.__func__(cls, config)


def carried_zeros(shape, dtype, device):
    """Zeros made outside any trace (``tnp.extend.wrap`` of the device's zeros): the state a
    stateful layer carries, which a compiled step captures and reads at every call."""
    return wrap(array_module(device).zeros(shape, dtype), device)


def carry_states(carried, states):
    """What a stateful layer keeps for its next batch: ``states`` without their history,
    written into the arrays it carried (``carried``) where they fit, in place, as Keras
    assigns its state variables (a compiled step then reads and writes those same arrays at
    every call); new arrays otherwise (another batch size, or nothing carried yet)."""
    new = [_stop_gradient(st) for st in states]
    if carried is not None and len(carried) == len(new) and \
            all(tuple(c.shape) == tuple(st.shape) for c, st in zip(carried, new)):
        with _paused():
            for c, st in zip(carried, new):
                c[...] = st
        return carried
    if _tracing():
        from tnp.extend import UnsupportedTrace
        raise UnsupportedTrace("a stateful layer's carried states change shape in a compiled "
                               "step; that step runs eagerly")
    return new


def check_stateful_replicas(layer):
    """A stateful recurrent layer runs on one replica only: NotImplementedError otherwise."""
    from ..distribute import distribute_lib   # noqa: PLC0415 - heavy, and only asked here
    ctx = distribute_lib.get_replica_context()
    if ctx is not None and ctx.num_replicas_in_sync > 1:
        raise NotImplementedError(f"{layer.name}: stateful RNNs are not supported under a "
                                  f"strategy of {ctx.num_replicas_in_sync} replicas (each "
                                  f"would carry a different part of the batch)")


class _BuiltinRNN(RNN):
    """A layer made of one built-in cell: the cell's arguments are the layer's."""

    _cell_class = None
    _extra_args = ()

    def __init__(self, args):
        """``args``: the subclass constructor's ``locals()`` (its signature is Keras's)."""
        kwargs = args["kwargs"]
        activity_regularizer = args["activity_regularizer"]
        cell_args = _pick(args, _CELL_ARGS + self._extra_args)
        rnn_args = _pick(args, _RNN_ARGS)
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                        if k not in ("name", "dtype", "trainable")}
        RNN.__init__(self, None, **rnn_args, name=kwargs.get("name"), dtype=kwargs.get("dtype"),
                     trainable=kwargs.get("trainable", True), **layer_kwargs)
        self.activity_regularizer = activity_regularizer
        cell_name = {"rnn": "simple_rnn_cell", "lstm": "lstm_cell", "gru": "gru_cell"}[
            self._cell_class._kind]
        self.cell = self._cell_class(**cell_args, name=f"{self.name}/{cell_name}",
                                     dtype=kwargs.get("dtype"),
                                     trainable=kwargs.get("trainable", True))

    def __getattr__(self, name):
        # units, activation, dropout... read through to the cell (as Keras's properties do)
        if name in _CELL_ARGS or name in type(self)._extra_args:
            cell = self.__dict__.get("cell")
            if cell is not None:
                return getattr(cell, name)
        raise AttributeError(f"{type(self).__name__!s} object has no attribute {name!r}")

    def get_config(self):
        cc = self.cell.get_config()
        cfg = {k: cc[k] for k in _CELL_ARGS + type(self)._extra_args}
        return {**super().get_config(), **cfg}

    @classmethod
    def from_config(cls, config):
        return Layer.from_config.__func__(cls, config)


class SimpleRNN(_BuiltinRNN):
    """Fully-connected RNN; mirrors ``tf.keras.layers.SimpleRNN(units, activation="tanh",
    use_bias=True, kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
    bias_initializer="zeros", ..., dropout=0., recurrent_dropout=0., return_sequences=False,
    return_state=False, go_backwards=False, stateful=False, unroll=False)``."""

    _cell_class = SimpleRNNCell

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, unroll=False,
                 time_major=False, **kwargs):
        super().__init__(locals())


class LSTM(_BuiltinRNN):
    """Long short-term memory; mirrors ``tf.keras.layers.LSTM(units, activation="tanh",
    recurrent_activation="sigmoid", use_bias=True, kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal", bias_initializer="zeros", unit_forget_bias=True, ...,
    dropout=0., recurrent_dropout=0., return_sequences=False, return_state=False,
    go_backwards=False, stateful=False, time_major=False, unroll=False)``. With
    ``return_state`` it returns ``[output, h, c]``."""

    _cell_class = LSTMCell
    _extra_args = ("recurrent_activation", "unit_forget_bias", "implementation")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, implementation=2, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, time_major=False,
                 unroll=False, **kwargs):
        super().__init__(locals())


class GRU(_BuiltinRNN):
    """Gated recurrent unit; mirrors ``tf.keras.layers.GRU(units, activation="tanh",
    recurrent_activation="sigmoid", use_bias=True, kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal", bias_initializer="zeros", ..., dropout=0.,
    recurrent_dropout=0., return_sequences=False, return_state=False, go_backwards=False,
    stateful=False, unroll=False, time_major=False, reset_after=True)``."""

    _cell_class = GRUCell
    _extra_args = ("recurrent_activation", "implementation", "reset_after")

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, implementation=2, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, unroll=False,
                 time_major=False, reset_after=True, **kwargs):
        super().__init__(locals())


# ---------------------------------------------------------------------------- Bidirectional
class Bidirectional(Layer):
    """Runs an RNN forwards and a copy of it backwards and merges the two; mirrors
    ``tf.keras.layers.Bidirectional(layer, merge_mode="concat", weights=None,
    backward_layer=None)``. ``merge_mode``: "concat", "sum", "mul", "ave" or None (a list of
    the two outputs). The backward copy's outputs are reversed back in time before merging
    when ``return_sequences`` (as Keras does). Weights: the forward layer's, then the
    backward layer's."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, RNN):
            raise ValueError(f"Bidirectional: please initialize with an RNN layer, got {layer!r}")
        if merge_mode not in ("concat", "sum", "mul", "ave", None):
            raise ValueError(f"Bidirectional: invalid merge_mode {merge_mode!r}; merge mode "
                             f"should be one of 'sum', 'mul', 'ave', 'concat', None")
        super().__init__(**kwargs)
        self.forward_layer = layer
        if backward_layer is None:
            cfg = layer.get_config()
            cfg["go_backwards"] = not layer.go_backwards
            cfg["name"] = "backward_" + layer.name
            backward_layer = type(layer).from_config(cfg)
        else:
            if backward_layer.return_sequences != layer.return_sequences or \
                    backward_layer.return_state != layer.return_state:
                raise ValueError("Bidirectional: forward_layer and backward_layer need the same "
                                 "return_sequences and return_state")
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.stateful = bool(getattr(layer, "stateful", False))
        self.supports_masking = True
        self._init_weights = weights

    def reset_states(self, states=None):
        """Reset both directions' carried states (``states``: the forward ones, then the
        backward ones)."""
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        states = _states_list(states)
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def build(self, input_shape):
        self.forward_layer._maybe_build(input_shape)
        self.backward_layer._maybe_build(input_shape)
        if self._init_weights is not None:
            self.set_weights(self._init_weights)
            self._init_weights = None
        super().build(input_shape)

    def _merge(self, a, b):
        if self.merge_mode == "concat":
            return tnp.concatenate([a, b], axis=-1)
        if self.merge_mode == "sum":
            return a + b
        if self.merge_mode == "mul":
            return a * b
        if self.merge_mode == "ave":
            return (a + b) / 2
        return [a, b]

    def call(self, inputs, mask=None, training=None, initial_state=None):
        fs = bs = None
        if initial_state is not None:
            st = _states_list(initial_state)
            half = len(st) // 2
            fs, bs = st[:half], st[half:]
        fwd = self.forward_layer(inputs, mask=mask, training=training, initial_state=fs)
        bwd = self.backward_layer(inputs, mask=mask, training=training, initial_state=bs)
        if self.return_state:
            fy, fstates = fwd[0], fwd[1:]
            by, bstates = bwd[0], bwd[1:]
        else:
            fy, by, fstates, bstates = fwd, bwd, [], []
        if self.return_sequences:
            axis = 0 if self.forward_layer.time_major else 1
            by = tnp.flip(by, axis=axis)
        y = self._merge(fy, by)
        if self.return_state:
            out = y if isinstance(y, list) else [y]
            return out + list(fstates) + list(bstates)
        return y

    def compute_output_shape(self, input_shape):
        f = self.forward_layer.compute_output_shape(input_shape)
        out = f[0] if self.return_state else f
        if self.merge_mode == "concat":
            out = tuple(out[:-1]) + (None if out[-1] is None else 2 * out[-1],)
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            st = list(f[1:])
            return outs + st + st
        return outs if self.merge_mode is None else out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            n = len(_state_sizes(self.forward_layer.cell))
            return outs + [None] * (2 * n)
        return outs if self.merge_mode is None else out

    def get_config(self):
        fl = self.forward_layer
        cfg = {**super().get_config(), "merge_mode": self.merge_mode,
               "layer": {"class_name": type(fl).__name__, "config": fl.get_config()},
               "backward_layer": {"class_name": type(self.backward_layer).__name__,
                                  "config": self.backward_layer.get_config()}}
        return cfg

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("layer", "backward_layer"):
            v = config.get(key)
            if isinstance(v, dict):
                config[key] = _layer_from_dict(v)
        return Layer.from_config.__func__(cls, config)
