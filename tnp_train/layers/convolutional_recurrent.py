"""``ConvLSTM2D`` (``tf.keras.layers.ConvLSTM2D``): an LSTM whose input and recurrent
transformations are 2-D convolutions.

Composed of ``tnp_train.ops.conv2d`` and tnp operations, so the tape differentiates it. Without
input dropout, the input convolution of every time step runs as one call over ``batch * time``
images; the recurrent convolution (``"same"`` padding, stride 1, as TF) runs once per step.
"""
from __future__ import annotations

import tnp

from .. import activations as _activations
from ..ops.conv import conv2d, conv_output_length
from ..utils.random import keep_mask
from ._common import add_option_weight, device_of as _device_of
from .base import Layer, running_on_placeholders
from .convolutional import _data_format, _positive, _tuple
from .core import set_weight_options, weight_options, weight_options_config
from .recurrent import _UnitForgetBias, _ser_act, carried_zeros, carry_states, \
    check_stateful_replicas

__all__ = ["ConvLSTM2D"]


class ConvLSTM2D(Layer):
    """Mirrors ``tf.keras.layers.ConvLSTM2D(filters, kernel_size, strides=(1, 1),
    padding="valid", data_format=None, dilation_rate=(1, 1), activation="tanh",
    recurrent_activation="hard_sigmoid", use_bias=True, kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal", bias_initializer="zeros", unit_forget_bias=True, ...,
    return_sequences=False, return_state=False, go_backwards=False, stateful=False,
    dropout=0.0, recurrent_dropout=0.0)`` (TF 2.4). Inputs ``(batch, time, rows, cols,
    channels)`` (``(batch, time, channels, rows, cols)`` channels-first); gates i, f, c, o in
    Keras's order along the kernels' last axis; ``call(inputs, mask=None, training=None,
    initial_state=None)``. ``stateful=True`` carries ``[h, c]`` from each batch to the next
    until ``reset_states()``, as the other RNN layers do (a fixed batch size; one replica)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), activation="tanh", recurrent_activation="hard_sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, dropout=0.0,
                 recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        cls = "ConvLSTM2D"
        if isinstance(filters, bool) or not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{cls}: filters must be a positive integer, got {filters!r}")
        self.filters = filters
        self.kernel_size = _positive(_tuple(kernel_size, 2, "kernel_size", cls), "kernel_size",
                                     cls)
        self.strides = _positive(_tuple(strides, 2, "strides", cls), "strides", cls)
        self.dilation_rate = _positive(_tuple(dilation_rate, 2, "dilation_rate", cls),
                                       "dilation_rate", cls)
        padding = str(padding).lower()
        if padding not in ("valid", "same"):
            raise ValueError(f"{cls}: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding
        self.data_format = _data_format(data_format, cls)
        set_weight_options(self, **weight_options(locals()))
        self.recurrent_activation = _activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._carried = None        # [h, c] of the last batch, for a stateful layer
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"{cls}: {what} must be in [0, 1], got {rate!r}")
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.supports_masking = True

    # -- shapes --------------------------------------------------------------------------------
    def _split(self, shape):
        if len(shape) != 5:
            raise ValueError(f"{self.name}: expected inputs of rank 5 (batch, time, rows, cols, "
                             f"channels), got shape {tuple(shape)}")
        if self.data_format == "channels_first":
            return shape[3:5], shape[2]
        return shape[2:4], shape[4]

    def _out_spatial(self, spatial):
        return tuple(conv_output_length(n, k, s, self.padding, d) if n is not None else None
                     for n, k, s, d in zip(spatial, self.kernel_size, self.strides,
                                           self.dilation_rate))

    def build(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        if self.stateful and tuple(input_shape)[0] is None:
            raise ValueError(f"{self.name}: if a RNN is stateful, it needs to know its batch "
                             f"size. Specify the batch size of your input tensors (input shape "
                             f"{tuple(input_shape)}): `tt.Input(shape, batch_size=...)`")
        _, channels = self._split(tuple(input_shape))
        if channels is None:
            raise ValueError(f"{self.name}: the channel dimension of the inputs must be known, "
                             f"got shape {tuple(input_shape)}")
        kh, kw = self.kernel_size
        f = self.filters
        self.kernel = add_option_weight(self, "kernel", (kh, kw, int(channels), 4 * f))
        self.recurrent_kernel = add_option_weight(self, "recurrent_kernel", (kh, kw, f, 4 * f),
                                                  "recurrent")
        if self.use_bias:
            init = _UnitForgetBias(self.bias_initializer, f) if self.unit_forget_bias \
                else self.bias_initializer
            self.bias = add_option_weight(self, "bias", (4 * f,), initializer=init)
        else:
            self.bias = None
        super().build(input_shape)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        s = tuple(input_shape)
        spatial, _ = self._split(s)
        rows, cols = self._out_spatial(spatial)
        frame = (self.filters, rows, cols) if self.data_format == "channels_first" \
            else (rows, cols, self.filters)
        out = (s[0], s[1]) + frame if self.return_sequences else (s[0],) + frame
        return [out, (s[0],) + frame, (s[0],) + frame] if self.return_state else out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out, None, None] if self.return_state else out

    # -- the computation -----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if args and isinstance(args[0], (list, tuple)) and len(args[0]) > 1:
            inputs = list(args[0])
            kwargs["initial_state"] = inputs[1:]
            args = (inputs[0],) + args[1:]
        return super().__call__(*args, **kwargs)

    def _masks(self, like, rate, training, count=4):
        if not training or rate <= 0:
            return None
        keep = 1.0 - rate
        # with tnp operations (a compiled step traces them; keep_mask then draws at every
        # call), made on ``like``'s device
        dev = _device_of(like)[0]
        return [(tnp.asarray(keep_mask(tuple(like.shape), rate), device=dev) / keep)
                .astype(like.dtype) for _ in range(count)]

    def call(self, inputs, mask=None, training=None, initial_state=None):
        x = tnp.asarray(inputs)
        first = self.data_format == "channels_first"
        if first:                                   # work channels-last
            x = tnp.transpose(x, (0, 1, 3, 4, 2))
        b, t = x.shape[0], x.shape[1]
        f = self.filters
        rows, cols = self._out_spatial(tuple(x.shape[2:4]))
        k, rk, bias = self.kernel, self.recurrent_kernel, self.bias
        conv_kw = dict(strides=self.strides, padding=self.padding,
                       dilation_rate=self.dilation_rate)
        drop = self._masks(x[:, 0], self.dropout, training)
        if drop is None:
            # every step's input convolution at once: (b * t) images
            flat = tnp.reshape(x, (b * t,) + tuple(x.shape[2:]))
            zx = tnp.reshape(conv2d(flat, k, bias, **conv_kw), (b, t, rows, cols, 4 * f))
        if self.stateful:
            check_stateful_replicas(self)
            if initial_state is None and self._carried is None and \
                    not running_on_placeholders():
                # zeros made outside any trace: a compiled step reads and writes these
                shape = (b, f, rows, cols) if first else (b, rows, cols, f)
                self._carried = [carried_zeros(shape, x.dtype, x.device) for _ in range(2)]
            if initial_state is None and self._carried is not None:
                if tuple(self._carried[0].shape)[0] != b:
                    raise ValueError(f"{self.name}: a stateful RNN keeps the batch size it "
                                     f"started with ({tuple(self._carried[0].shape)[0]}), got "
                                     f"a batch of {b}; call reset_states() to start over")
                # copies: the carried arrays are overwritten after the call, and the backward
                # pass reads the initial states
                initial_state = [st.copy() for st in self._carried]
        if initial_state is not None:
            states = list(initial_state)
            if len(states) != 2:
                raise ValueError(f"{self.name}: initial_state must be [h, c], got "
                                 f"{len(states)} state(s)")
            h, c = (tnp.asarray(s) for s in states)
            if first:
                h, c = tnp.transpose(h, (0, 2, 3, 1)), tnp.transpose(c, (0, 2, 3, 1))
            if tuple(h.shape) != (b, rows, cols, f) or tuple(c.shape) != (b, rows, cols, f):
                raise ValueError(f"{self.name}: initial states of shape {tuple(h.shape)} and "
                                 f"{tuple(c.shape)} do not fit states of shape "
                                 f"{(b, rows, cols, f)}")
        else:
            h = c = tnp.zeros((b, rows, cols, f), dtype=x.dtype, device=x.device)
        rdrop = self._masks(h, self.recurrent_dropout, training)
        m = None
        if mask is not None:
            if isinstance(mask, (list, tuple)):
                mask = mask[0]
            m = tnp.asarray(mask).astype(x.dtype) if mask is not None else None
        ra, act = self.recurrent_activation, self.activation
        outputs = []
        steps = range(t - 1, -1, -1) if self.go_backwards else range(t)
        for step in steps:
            if drop is None:
                z = zx[:, step]
            else:
                xs = x[:, step]
                ks = [k[..., i * f:(i + 1) * f] for i in range(4)]
                bs = [bias[i * f:(i + 1) * f] if bias is not None else None for i in range(4)]
                z = tnp.concatenate([conv2d(xs * drop[i], ks[i], bs[i], **conv_kw)
                                     for i in range(4)], axis=-1)
            if rdrop is None:
                z = z + conv2d(h, rk, None, padding="same")
            else:
                z = z + tnp.concatenate(
                    [conv2d(h * rdrop[i], rk[..., i * f:(i + 1) * f], None, padding="same")
                     for i in range(4)], axis=-1)
            i_g = ra(z[..., :f])
            f_g = ra(z[..., f:2 * f])
            c_new = f_g * c + i_g * act(z[..., 2 * f:3 * f])
            o_g = ra(z[..., 3 * f:])
            h_new = o_g * act(c_new)
            if m is not None:       # a masked step keeps the previous state (Keras's rule)
                keep = tnp.reshape(m[:, step], (b, 1, 1, 1))
                h_new = keep * h_new + (1 - keep) * h
                c_new = keep * c_new + (1 - keep) * c
            h, c = h_new, c_new
            if self.return_sequences:
                outputs.append(h)
        out = tnp.stack(outputs, axis=1) if self.return_sequences else h
        if first:
            out = tnp.moveaxis(out, -1, 2 if self.return_sequences else 1)
            h, c = tnp.moveaxis(h, -1, 1), tnp.moveaxis(c, -1, 1)
        if self.stateful and not running_on_placeholders():
            self._carried = carry_states(self._carried, [h, c])   # no gradient across batches
        return [out, h, c] if self.return_state else out

    @property
    def states(self):
        """``[h, c]`` a stateful layer carries to its next batch (None before the first)."""
        return None if self._carried is None else list(self._carried)

    def reset_states(self, states=None):
        """Zero the carried ``[h, c]``, or set them to ``states``."""
        if not self.stateful:
            raise AttributeError(f"{self.name}: reset_states() is for a stateful layer "
                                 f"(stateful=True)")
        if states is None:
            if self._carried is not None:
                self._carried = carry_states(self._carried,
                                             [tnp.zeros_like(st) for st in self._carried])
            return
        states = [st if isinstance(st, tnp.ndarray) else tnp.asarray(st) for st in states]
        if len(states) != 2 or tuple(states[0].shape) != tuple(states[1].shape):
            raise ValueError(f"{self.name}: reset_states expects [h, c] of one shape, got "
                             f"{[tuple(st.shape) for st in states]}")
        self._carried = carry_states(self._carried, states)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "activation": _ser_act(self.activation),
                "recurrent_activation": _ser_act(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias,
                **weight_options_config(
                    self, "use_bias", "kernel_initializer", "recurrent_initializer",
                    "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
                    "bias_regularizer", "activity_regularizer", "kernel_constraint",
                    "recurrent_constraint", "bias_constraint"),
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout}

