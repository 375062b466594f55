"""Convolution layers with TF 2.4 ``tf.keras.layers`` signatures: ``Conv1D``, ``Conv2D``,
``Conv3D``, ``Conv1DTranspose``, ``Conv2DTranspose``, ``Conv3DTranspose``, ``DepthwiseConv2D``,
``SeparableConv2D``.

Channels-last (``NWC`` / ``NHWC``) is the native layout; ``data_format="channels_first"`` is
served by transposing the input and the output. Kernels use Keras's layouts
(``Conv2D``: ``(kh, kw, cin // groups, filters)``, ``Conv2DTranspose``:
``(kh, kw, filters, cin)``, ``DepthwiseConv2D``: ``(kh, kw, cin, depth_multiplier)``). The
computation is one fused op of :mod:`tnp_train.ops.conv` (im2col + one GEMM, bias and a ReLU
activation in the same pass; one tape node with a hand-written backward); other activations
are applied after it. The 3-D layers are lowered onto the 2-D op (see :func:`_conv3d` and
:func:`_conv3d_transpose`): the depth taps become channels, so the same kernels and backward
serve them, and only the depth gather/scatter is recorded as tnp operations.
"""
from __future__ import annotations

import tnp

from .. import activations as _activations
from .. import constraints as _constraints
from .. import initializers as _initializers
from .. import regularizers as _regularizers
from ..ops import conv as _ops
from ._axis_ops import pad_axis, spread_axis
from ._common import add_option_weight, positive_int
from .base import Layer

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "DepthwiseConv2D", "SeparableConv2D", "Convolution1D", "Convolution2D",
           "Convolution3D", "Convolution1DTranspose", "Convolution2DTranspose",
           "Convolution3DTranspose", "SeparableConvolution2D"]


# ----------------------------------------------------------------------------- argument helpers
def _tuple(value, n, what, layer):
    if isinstance(value, int) or (hasattr(value, "__index__") and not isinstance(value, (tuple, list))):
        t = (int(value),) * n
    else:
        try:
            t = tuple(int(v) for v in value)
        except TypeError:
            raise ValueError(f"{layer}: the `{what}` argument must be an int or a tuple of {n} "
                             f"ints, got {value!r}") from None
        if len(t) != n:
            raise ValueError(f"{layer}: the `{what}` argument must be a tuple of {n} integers, "
                             f"got {value!r}")
    return t


def _positive(t, what, layer, allow_zero=False):
    if any(v < 0 or (v == 0 and not allow_zero) for v in t):
        raise ValueError(f"{layer}: the `{what}` argument must be positive, got {t}")
    return t


def _data_format(value, layer):
    if value is None:
        return "channels_last"
    v = str(value).lower()
    if v not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: data_format must be 'channels_last' or 'channels_first', got "
                         f"{value!r}")
    return v


def _get_regularizer(identifier):
    return _regularizers.get(identifier)


def _get_constraint(identifier):
    return _constraints.get(identifier)


def _serialize(obj, original=None, getter=None):
    """Config value of an initializer / regularizer / constraint: the name it was given, a
    ``{"class_name", "config"}`` dict when that reads back, else the object itself."""
    if obj is None:
        return None
    if isinstance(original, str):
        return original
    if hasattr(obj, "get_config") and not isinstance(obj, type):
        d = {"class_name": type(obj).__name__, "config": obj.get_config()}
        try:
            (getter or _deserialize_initializer)(d)
            return d
        except Exception:
            return obj
    return obj


def _deserialize_initializer(identifier):
    if isinstance(identifier, dict):
        try:
            return _initializers.get(identifier)
        except (ValueError, TypeError):
            cls = getattr(_initializers, identifier.get("class_name", ""), None)
            if cls is None:
                raise
            return cls(**identifier.get("config", {}))
    return _initializers.get(identifier)


def _is_relu(fn):
    return fn is _activations.get("relu")


def _to_last(x, rank):
    """channels_first -> channels_last (recorded on the tape)."""
    return tnp.moveaxis(x, 1, -1)


def _to_first(y, rank):
    return tnp.moveaxis(y, -1, 1)


# ----------------------------------------------------------------------------- 3-D on the 2-D op
def _depth_too_small(name, xshape, kshape, out):
    if out <= 0:
        raise ValueError(f"{name}: an input of shape {tuple(xshape)} is smaller than the kernel "
                         f"{tuple(kshape)} along the depth axis")


def _conv3d(x, kernel, bias, strides, padding, dilation, groups, activation, name):
    """NDHWC convolution with a Keras kernel ``(kd, kh, kw, cin // groups, filters)``, as one
    2-D convolution: the ``kd`` depth taps of each output depth are gathered (padded, strided
    slices) and stacked into the channels, ``(N * OD, H, W, kd * cin)``, which the kernel seen
    as ``(kh, kw, kd * cin // groups, filters)`` convolves (group by group: a group's channels
    are laid out ``(kd, cin // groups)``, as its kernel rows)."""
    N, D, H, W, C = x.shape
    KD, KH, KW, Cg, F = kernel.shape
    (sd, sh, sw), (dd, dh, dw) = strides, dilation
    OD = _ops.conv_output_length(D, KD, sd, padding, dd)
    _depth_too_small(name, x.shape, kernel.shape, OD)
    before, after = _ops.same_pads(D, KD, sd, dd) if padding == "same" else (0, 0)
    xp = pad_axis(x, 1, before, after)
    span = (OD - 1) * sd + 1
    cols = tnp.stack([xp[:, i * dd:i * dd + span:sd] for i in range(KD)], axis=4)
    if groups > 1:
        cols = tnp.transpose(tnp.reshape(cols, (N, OD, H, W, KD, groups, Cg)),
                             (0, 1, 2, 3, 5, 4, 6))
    cols = tnp.reshape(cols, (N * OD, H, W, KD * C))
    k2 = tnp.reshape(tnp.transpose(kernel, (1, 2, 0, 3, 4)), (KH, KW, KD * Cg, F))
    y = _ops.conv2d(cols, k2, bias, (sh, sw), padding, (dh, dw), groups, activation)
    return tnp.reshape(y, (N, OD) + tuple(y.shape[1:]))


def _conv3d_transpose(x, kernel, out_spatial, strides, padding, dilation, name):
    """NDHWC transposed convolution with a Keras kernel ``(kd, kh, kw, filters, cin)``, as one
    2-D transposed convolution of the ``N * D`` depth slices with the kernel seen as
    ``(kh, kw, kd * filters, cin)``; each depth tap's slices are then added at depth
    ``d * stride + tap * dilation`` (zeros between them for strides) and the result is cut to
    ``out_spatial[0]`` as the 2-D op cuts its own axes. No bias. (Unstacking, padding and
    adding keep the backward to concatenations and sums: one slice, the final cut.)"""
    N, D, H, W, Cin = x.shape
    KD, KH, KW, Co, _ = kernel.shape
    OD, OH, OW = out_spatial
    (sd, sh, sw), (dd, dh, dw) = strides, dilation
    _depth_too_small(name, x.shape, kernel.shape, OD)
    k2 = tnp.reshape(tnp.transpose(kernel, (1, 2, 0, 3, 4)), (KH, KW, KD * Co, Cin))
    z = _ops.conv2d_transpose(tnp.reshape(x, (N * D, H, W, Cin)), k2, None, (OH, OW), (sh, sw),
                              padding, (dh, dw))
    taps = tnp.unstack(tnp.reshape(z, (N, D, OH, OW, KD, Co)), axis=4)
    start = _ops.deconv_pad_before(D, OD, KD, sd, dd, padding)
    full = max((KD - 1) * dd + D * sd, start + OD)
    y = None
    for i, zi in enumerate(taps):
        zi = pad_axis(spread_axis(zi, 1, sd), 1, i * dd, full - i * dd - D * sd)
        y = zi if y is None else y + zi
    return y if (start, OD) == (0, full) else y[:, start:start + OD]


# ----------------------------------------------------------------------------- the base
class _Conv(Layer):
    """Shared argument handling of the convolution layers (``rank`` spatial dimensions)."""

    rank = 2
    _transposed = False

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        r = self.rank
        if filters is not None:
            filters = positive_int(filters, cls, "filters", "{who}: invalid value for argument "
                                   "`filters`: expected a strictly positive value, got {value}")
        self.filters = filters
        self.kernel_size = _positive(_tuple(kernel_size, r, "kernel_size", cls), "kernel_size", cls)
        self.strides = _positive(_tuple(strides, r, "strides", cls), "strides", cls)
        self.dilation_rate = _positive(_tuple(dilation_rate, r, "dilation_rate", cls),
                                       "dilation_rate", cls)
        pad = str(padding).lower()
        allowed = ("valid", "same", "causal") if (r == 1 and not self._transposed) else ("valid", "same")
        if pad not in allowed:
            raise ValueError(f"{cls}: padding must be one of {allowed}, got {padding!r}")
        self.padding = pad
        self.data_format = _data_format(data_format, cls)
        if pad == "causal" and self.data_format != "channels_last":
            raise ValueError(f"{cls}: causal padding is only supported with channels_last")
        if any(s > 1 for s in self.strides) and any(d > 1 for d in self.dilation_rate):
            raise ValueError(f"{cls}: strides > 1 not supported in conjunction with dilation_rate "
                             f"> 1; got strides={self.strides}, dilation_rate={self.dilation_rate}")
        groups = positive_int(groups, cls, "groups")
        if filters is not None and filters % groups:
            raise ValueError(f"{cls}: the number of filters ({filters}) must be evenly divisible by "
                             f"the number of groups ({groups})")
        self.groups = groups
        self.activation = _activations.get(activation)
        self.use_bias = bool(use_bias)
        self._init_ids = {"kernel_initializer": kernel_initializer, "bias_initializer": bias_initializer,
                          "kernel_regularizer": kernel_regularizer, "bias_regularizer": bias_regularizer,
                          "activity_regularizer": activity_regularizer,
                          "kernel_constraint": kernel_constraint, "bias_constraint": bias_constraint}
        self.kernel_initializer = _deserialize_initializer(kernel_initializer)
        self.bias_initializer = _deserialize_initializer(bias_initializer)
        self.kernel_regularizer = _get_regularizer(kernel_regularizer)
        self.bias_regularizer = _get_regularizer(bias_regularizer)
        self.activity_regularizer = _get_regularizer(activity_regularizer)
        self.kernel_constraint = _get_constraint(kernel_constraint)
        self.bias_constraint = _get_constraint(bias_constraint)
        self._fuse_relu = _is_relu(self.activation)

    # -------------------------------------------------------------- shapes
    def _check_rank(self, shape):
        if len(shape) != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"ndim={self.rank + 2}, found ndim={len(shape)}. Full shape received: "
                             f"{tuple(shape)}")

    def _channels(self, shape):
        self._check_rank(shape)
        c = shape[1] if self.data_format == "channels_first" else shape[-1]
        if c is None:
            raise ValueError(f"{self.name}: the channel dimension of the inputs should be defined; "
                             f"found None in shape {tuple(shape)}")
        return int(c)

    def _spatial(self, shape):
        return tuple(shape[2:]) if self.data_format == "channels_first" else tuple(shape[1:-1])

    def _pack(self, batch, spatial, channels):
        if self.data_format == "channels_first":
            return (batch, channels) + tuple(spatial)
        return (batch,) + tuple(spatial) + (channels,)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self._check_rank(shape)
        spatial = [_ops.conv_output_length(n, k, s, self.padding, d) for n, k, s, d in
                   zip(self._spatial(shape), self.kernel_size, self.strides, self.dilation_rate)]
        return self._pack(shape[0], spatial, self._out_channels(shape))

    def _out_channels(self, shape):
        return self.filters

    # -------------------------------------------------------------- config
    def _weight_config(self, name, attr=None):
        """The config entries ``<name>_initializer``, ``_regularizer`` and ``_constraint`` of
        the options kept as ``<attr>_*`` (``attr`` defaults to ``name``), as they were given."""
        attr = attr or name
        ids = self._init_ids
        return {f"{name}_{kind}": _serialize(getattr(self, f"{attr}_{kind}"), ids[f"{attr}_{kind}"],
                                             getter)
                for kind, getter in (("initializer", None), ("regularizer", _get_regularizer),
                                     ("constraint", _get_constraint))}

    def _base_config(self):
        ids = self._init_ids
        return {
            "kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding,
            "data_format": self.data_format, "dilation_rate": self.dilation_rate,
            "activation": _activations.serialize(self.activation), "use_bias": self.use_bias,
            **self._weight_config("bias"),
            "activity_regularizer": _serialize(self.activity_regularizer,
                                               ids["activity_regularizer"], _get_regularizer),
        }

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, **self._base_config(),
                "groups": self.groups, **self._weight_config("kernel")}

    # -------------------------------------------------------------- call helpers
    def _prepare(self, inputs):
        x = inputs if isinstance(inputs, tnp.ndarray) else tnp.asarray(inputs)
        self._check_rank(x.shape)
        if self.data_format == "channels_first":
            x = _to_last(x, self.rank)
        return x

    def _finish(self, y, fused):
        if not fused:
            y = self.activation(y)
        if self.data_format == "channels_first":
            y = _to_first(y, self.rank)
        return y

    def _add_bias(self):
        return add_option_weight(self, "bias", (self.filters,)) if self.use_bias else None


class _ConvForward(_Conv):
    def build(self, input_shape):
        shape = tuple(input_shape)
        cin = self._channels(shape)
        if cin % self.groups:
            raise ValueError(f"{self.name}: the number of input channels ({cin}, input shape {shape}) "
                             f"must be evenly divisible by the number of groups ({self.groups})")
        self.kernel = add_option_weight(self, "kernel",
                                        self.kernel_size + (cin // self.groups, self.filters))
        self.bias = self._add_bias()
        super().build(input_shape)

    def call(self, inputs):
        x = self._prepare(inputs)
        k = self.kernel
        if x.shape[-1] != k.shape[-2] * self.groups:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"axis -1 of input shape to have value {k.shape[-2] * self.groups} (kernel "
                             f"{tuple(k.shape)}, groups={self.groups}) but received input with shape "
                             f"{tuple(inputs.shape)}")
        fused = self._fuse_relu
        act = "relu" if fused else None
        if self.rank == 1:
            y = _ops.conv1d(x, k, self.bias, self.strides, self.padding, self.dilation_rate,
                            self.groups, act)
        elif self.rank == 2:
            y = _ops.conv2d(x, k, self.bias, self.strides, self.padding, self.dilation_rate,
                            self.groups, act)
        else:
            y = _conv3d(x, k, self.bias, self.strides, self.padding, self.dilation_rate,
                        self.groups, act, self.name)
        return self._finish(y, fused)


class Conv1D(_ConvForward):
    """Mirrors ``tf.keras.layers.Conv1D(filters, kernel_size, strides=1, padding='valid',
    data_format='channels_last', dilation_rate=1, groups=1, activation=None, use_bias=True,
    kernel_initializer='glorot_uniform', bias_initializer='zeros', kernel_regularizer=None,
    bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
    bias_constraint=None)``; kernel ``(kernel_size, cin // groups, filters)``; ``padding``
    also ``'causal'``."""

    rank = 1


class Conv2D(_ConvForward):
    """Mirrors ``tf.keras.layers.Conv2D(filters, kernel_size, strides=(1, 1), padding='valid',
    data_format=None, dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
    kernel_initializer='glorot_uniform', bias_initializer='zeros', kernel_regularizer=None,
    bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
    bias_constraint=None)``; kernel ``(kh, kw, cin // groups, filters)``."""

    rank = 2


class Conv3D(_ConvForward):
    """Mirrors ``tf.keras.layers.Conv3D(filters, kernel_size, strides=(1, 1, 1),
    padding='valid', data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
    use_bias=True, kernel_initializer='glorot_uniform', bias_initializer='zeros',
    kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    kernel_constraint=None, bias_constraint=None)``; kernel ``(kd, kh, kw, cin // groups,
    filters)``."""

    rank = 3


# ----------------------------------------------------------------------------- transposed
class _ConvTranspose(_Conv):
    _transposed = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=1,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)
        cls = type(self).__name__
        if output_padding is not None:
            output_padding = _positive(_tuple(output_padding, self.rank, "output_padding", cls),
                                       "output_padding", cls, allow_zero=True)
            for s, op in zip(self.strides, output_padding):
                if op >= s:
                    raise ValueError(f"{cls}: strides {self.strides} must be greater than output "
                                     f"padding {output_padding}")
        self.output_padding = output_padding

    def build(self, input_shape):
        shape = tuple(input_shape)
        cin = self._channels(shape)
        self.kernel = add_option_weight(self, "kernel", self.kernel_size + (self.filters, cin))
        self.bias = self._add_bias()
        super().build(input_shape)

    def _out_spatial(self, spatial):
        ops = self.output_padding or (None,) * self.rank
        return tuple(_ops.deconv_output_length(n, k, s, self.padding, op, d) for n, k, s, op, d in
                     zip(spatial, self.kernel_size, self.strides, ops, self.dilation_rate))

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self._check_rank(shape)
        return self._pack(shape[0], self._out_spatial(self._spatial(shape)), self.filters)

    def call(self, inputs):
        x = self._prepare(inputs)
        k = self.kernel
        if x.shape[-1] != k.shape[-1]:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"axis -1 of input shape to have value {k.shape[-1]} (kernel "
                             f"{tuple(k.shape)}) but received input with shape {tuple(inputs.shape)}")
        out = self._out_spatial(tuple(x.shape[1:-1]))
        if self.rank == 3:
            y = _conv3d_transpose(x, k, out, self.strides, self.padding, self.dilation_rate,
                                  self.name)
            return self._finish(y if self.bias is None else y + self.bias, False)
        fused = self._fuse_relu
        act = "relu" if fused else None
        if self.rank == 1:
            y = _ops.conv1d_transpose(x, k, self.bias, out[0], self.strides, self.padding,
                                      self.dilation_rate, act)
        else:
            y = _ops.conv2d_transpose(x, k, self.bias, out, self.strides, self.padding,
                                      self.dilation_rate, act)
        return self._finish(y, fused)

    def get_config(self):
        cfg = super().get_config()
        cfg.pop("groups")
        cfg["output_padding"] = self.output_padding
        return cfg


class Conv1DTranspose(_ConvTranspose):
    """Mirrors ``tf.keras.layers.Conv1DTranspose(filters, kernel_size, strides=1,
    padding='valid', output_padding=None, data_format=None, dilation_rate=1, activation=None,
    use_bias=True, ...)``; kernel ``(kernel_size, filters, cin)``."""

    rank = 1


class Conv2DTranspose(_ConvTranspose):
    """Mirrors ``tf.keras.layers.Conv2DTranspose(filters, kernel_size, strides=(1, 1),
    padding='valid', output_padding=None, data_format=None, dilation_rate=(1, 1),
    activation=None, use_bias=True, kernel_initializer='glorot_uniform',
    bias_initializer='zeros', kernel_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, kernel_constraint=None, bias_constraint=None)``; kernel
    ``(kh, kw, filters, cin)``."""

    rank = 2


class Conv3DTranspose(_ConvTranspose):
    """Mirrors ``tf.keras.layers.Conv3DTranspose(filters, kernel_size, strides=(1, 1, 1),
    padding='valid', output_padding=None, data_format=None, dilation_rate=(1, 1, 1),
    activation=None, use_bias=True, kernel_initializer='glorot_uniform',
    bias_initializer='zeros', kernel_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, kernel_constraint=None, bias_constraint=None)``; kernel
    ``(kd, kh, kw, filters, cin)``."""

    rank = 3


# ----------------------------------------------------------------------------- depthwise / separable
class _Depthwise(_Conv):
    """What ``DepthwiseConv2D`` and ``SeparableConv2D`` share: a depthwise kernel
    ``(kh, kw, cin, depth_multiplier)`` (configured through ``_Conv``'s ``kernel_*`` arguments),
    applied as a grouped convolution with one group per input channel."""

    def __init__(self, args):
        """``args``: the subclass constructor's ``locals()`` (its signature is Keras's, with
        ``depthwise_*`` for ``_Conv``'s ``kernel_*``)."""
        super().__init__(args.get("filters"), args["kernel_size"], strides=args["strides"],
                         padding=args["padding"], data_format=args["data_format"],
                         dilation_rate=args["dilation_rate"], activation=args["activation"],
                         use_bias=args["use_bias"],
                         kernel_initializer=args["depthwise_initializer"],
                         bias_initializer=args["bias_initializer"],
                         kernel_regularizer=args["depthwise_regularizer"],
                         bias_regularizer=args["bias_regularizer"],
                         activity_regularizer=args["activity_regularizer"],
                         kernel_constraint=args["depthwise_constraint"],
                         bias_constraint=args["bias_constraint"], **args["kwargs"])
        self._set_depth_multiplier(args["depth_multiplier"], type(self).__name__)

    def _depthwise_config(self):
        return {"depth_multiplier": self.depth_multiplier,
                **self._weight_config("depthwise", "kernel")}

    def _set_depth_multiplier(self, depth_multiplier, who):
        self.depth_multiplier = positive_int(depth_multiplier, who, "depth_multiplier",
                                             "{who}: {what} must be positive, got {value}")

    def _add_depthwise_kernel(self, cin):
        return add_option_weight(self, "depthwise_kernel",
                                 self.kernel_size + (cin, self.depth_multiplier), "kernel")

    def _grouped_depthwise_kernel(self, x, inputs):
        """``(kernel, cin)``: the depthwise kernel as a ``conv2d`` kernel for ``cin`` groups,
        after checking that ``x`` (``inputs`` prepared) has ``cin`` channels."""
        dk = self.depthwise_kernel
        cin = dk.shape[2]
        if x.shape[-1] != cin:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: expected "
                             f"axis -1 of input shape to have value {cin} (depthwise kernel "
                             f"{tuple(dk.shape)}) but received input with shape {tuple(inputs.shape)}")
        return tnp.reshape(dk, tuple(dk.shape[:2]) + (1, cin * self.depth_multiplier)), cin


class DepthwiseConv2D(_Depthwise):
    """Mirrors ``tf.keras.layers.DepthwiseConv2D(kernel_size, strides=(1, 1), padding='valid',
    depth_multiplier=1, data_format=None, dilation_rate=(1, 1), activation=None,
    use_bias=True, depthwise_initializer='glorot_uniform', bias_initializer='zeros',
    depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
    depthwise_constraint=None, bias_constraint=None)``; kernel ``(kh, kw, cin,
    depth_multiplier)``, output channel ``c * depth_multiplier + m``. Computed as a grouped
    convolution with one group per input channel."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(locals())

    def build(self, input_shape):
        shape = tuple(input_shape)
        cin = self._channels(shape)
        self.depthwise_kernel = self._add_depthwise_kernel(cin)
        self.filters = cin * self.depth_multiplier
        self.bias = self._add_bias()
        super().build(input_shape)

    def _out_channels(self, shape):
        return self._channels(shape) * self.depth_multiplier

    def call(self, inputs):
        x = self._prepare(inputs)
        k, cin = self._grouped_depthwise_kernel(x, inputs)
        fused = self._fuse_relu
        y = _ops.conv2d(x, k, self.bias, self.strides, self.padding, self.dilation_rate, cin,
                        "relu" if fused else None)
        return self._finish(y, fused)

    def get_config(self):
        return {**Layer.get_config(self), **self._base_config(), **self._depthwise_config()}


class SeparableConv2D(_Depthwise):
    """Mirrors ``tf.keras.layers.SeparableConv2D(filters, kernel_size, strides=(1, 1),
    padding='valid', data_format=None, dilation_rate=(1, 1), depth_multiplier=1,
    activation=None, use_bias=True, depthwise_initializer='glorot_uniform',
    pointwise_initializer='glorot_uniform', bias_initializer='zeros',
    depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
    bias_constraint=None)``: a depthwise convolution (kernel ``(kh, kw, cin, depth_multiplier)``)
    then a 1x1 convolution (kernel ``(1, 1, cin * depth_multiplier, filters)``) with the bias."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        # TF's base Conv takes these and SeparableConv2D never uses them (NASNet passes
        # kernel_initializer="he_normal"): accepted and ignored, as in TF
        for unused in ("kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            kwargs.pop(unused, None)
        super().__init__(locals())
        self._init_ids.update(pointwise_initializer=pointwise_initializer,
                              pointwise_regularizer=pointwise_regularizer,
                              pointwise_constraint=pointwise_constraint)
        self.pointwise_initializer = _deserialize_initializer(pointwise_initializer)
        self.pointwise_regularizer = _get_regularizer(pointwise_regularizer)
        self.pointwise_constraint = _get_constraint(pointwise_constraint)

    def build(self, input_shape):
        shape = tuple(input_shape)
        cin = self._channels(shape)
        self.depthwise_kernel = self._add_depthwise_kernel(cin)
        self.pointwise_kernel = add_option_weight(
            self, "pointwise_kernel", (1, 1, cin * self.depth_multiplier, self.filters),
            "pointwise")
        self.bias = self._add_bias()
        super().build(input_shape)

    def call(self, inputs):
        x = self._prepare(inputs)
        k, cin = self._grouped_depthwise_kernel(x, inputs)
        h = _ops.conv2d(x, k, None, self.strides, self.padding, self.dilation_rate, cin, None)
        fused = self._fuse_relu
        y = _ops.conv2d(h, self.pointwise_kernel, self.bias, (1, 1), "valid", (1, 1), 1,
                        "relu" if fused else None)
        return self._finish(y, fused)

    def get_config(self):
        return {**Layer.get_config(self), "filters": self.filters, **self._base_config(),
                **self._depthwise_config(), **self._weight_config("pointwise")}


# Keras's aliases
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
SeparableConvolution2D = SeparableConv2D
