"""``SeparableConv1D`` (``tf.keras.layers.SeparableConv1D``): a depthwise 1-D convolution
(one filter bank per input channel) followed by a pointwise (1x1) convolution, as two
``tnp_train.ops.conv1d`` calls (grouped, then plain), which the tape differentiates."""
from __future__ import annotations

import tnp

from ..ops.conv import conv1d, conv_output_length
from ._common import add_option_weight
from .base import Layer
from .convolutional import _data_format, _positive, _tuple
from .core import set_weight_options, weight_options, weight_options_config

__all__ = ["SeparableConv1D", "SeparableConvolution1D"]


class SeparableConv1D(Layer):
    """Mirrors ``tf.keras.layers.SeparableConv1D(filters, kernel_size, strides=1,
    padding="valid", data_format=None, dilation_rate=1, depth_multiplier=1, activation=None,
    use_bias=True, depthwise_initializer="glorot_uniform",
    pointwise_initializer="glorot_uniform", bias_initializer="zeros", ...)`` (TF 2.4):
    ``depthwise_kernel`` ``(k, channels, depth_multiplier)``, ``pointwise_kernel`` ``(1,
    channels * depth_multiplier, filters)``; ``padding`` "valid", "same" or "causal"."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        for unused in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            kwargs.pop(unused, None)        # TF's base Conv takes them; never used here
        super().__init__(**kwargs)
        cls = "SeparableConv1D"
        if isinstance(filters, bool) or not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{cls}: filters must be a positive integer, got {filters!r}")
        if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, int) or \
                depth_multiplier <= 0:
            raise ValueError(f"{cls}: depth_multiplier must be a positive integer, got "
                             f"{depth_multiplier!r}")
        self.filters, self.depth_multiplier = filters, depth_multiplier
        self.kernel_size = _positive(_tuple(kernel_size, 1, "kernel_size", cls),
                                     "kernel_size", cls)
        self.strides = _positive(_tuple(strides, 1, "strides", cls), "strides", cls)
        self.dilation_rate = _positive(_tuple(dilation_rate, 1, "dilation_rate", cls),
                                       "dilation_rate", cls)
        padding = str(padding).lower()
        if padding not in ("valid", "same", "causal"):
            raise ValueError(f"{cls}: padding must be 'valid', 'same' or 'causal', got "
                             f"{padding!r}")
        self.padding = padding
        self.data_format = _data_format(data_format, cls)
        if padding == "causal" and self.data_format != "channels_last":
            raise ValueError(f"{cls}: causal padding is only supported for channels_last")
        set_weight_options(self, **weight_options(locals()))

    def _channels(self, shape):
        if len(shape) != 3:
            raise ValueError(f"{self.name}: expected inputs of rank 3, got shape {tuple(shape)}")
        c = shape[1] if self.data_format == "channels_first" else shape[-1]
        if c is None:
            raise ValueError(f"{self.name}: the channel dimension of the inputs should be "
                             f"defined, got shape {tuple(shape)}")
        return int(c)

    def build(self, input_shape):
        cin = self._channels(tuple(input_shape))
        dm, k = self.depth_multiplier, self.kernel_size[0]
        self.depthwise_kernel = add_option_weight(self, "depthwise_kernel", (k, cin, dm),
                                                  "depthwise")
        self.pointwise_kernel = add_option_weight(self, "pointwise_kernel",
                                                  (1, cin * dm, self.filters), "pointwise")
        self.bias = add_option_weight(self, "bias", (self.filters,)) if self.use_bias else None
        super().build(input_shape)

    def call(self, inputs):
        x = tnp.asarray(inputs)
        first = self.data_format == "channels_first"
        if first:
            x = tnp.swapaxes(x, 1, 2)
        cin = self.depthwise_kernel.shape[1]
        if x.shape[-1] != cin:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected {cin} channels, got input of shape "
                             f"{tuple(inputs.shape)}")
        k = self.kernel_size[0]
        # the depthwise kernel as a grouped convolution's: output channel c * dm + m
        dk = tnp.reshape(self.depthwise_kernel, (k, 1, cin * self.depth_multiplier))
        h = conv1d(x, dk, None, self.strides, self.padding, self.dilation_rate, groups=cin)
        y = conv1d(h, self.pointwise_kernel, self.bias, 1, "valid")
        if first:
            y = tnp.swapaxes(y, 1, 2)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        s = tuple(input_shape)
        length = s[2] if self.data_format == "channels_first" else s[1]
        out = None if length is None else conv_output_length(
            length, self.kernel_size[0], self.strides[0], self.padding, self.dilation_rate[0])
        if self.data_format == "channels_first":
            return (s[0], self.filters, out)
        return (s[0], out, self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "depth_multiplier": self.depth_multiplier,
                **weight_options_config(
                    self, "activation", "use_bias", "depthwise_initializer",
                    "pointwise_initializer", "bias_initializer", "depthwise_regularizer",
                    "pointwise_regularizer", "bias_regularizer", "activity_regularizer",
                    "depthwise_constraint", "pointwise_constraint", "bias_constraint")}


SeparableConvolution1D = SeparableConv1D
