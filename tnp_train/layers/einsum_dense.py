"""``EinsumDense`` and ``RandomFourierFeatures`` (TF 2.4's ``tf.keras.layers.experimental``)."""
from __future__ import annotations

import math
import re

import numpy as _np

import tnp

from .. import initializers as _initializers
from ._common import add_option_weight
from .base import Layer
from .core import (
    _DENSE_WEIGHT_ARGS, _serialize, set_weight_options, weight_options, weight_options_config,
)

__all__ = ["EinsumDense", "RandomFourierFeatures"]


def _einsum_shapes(equation, bias_axes, input_shape, output_shape):
    """(kernel shape, bias shape or None, full output shape) of ``EinsumDense`` (TF's rules):
    the equation is ``IN,W->OUT``, ``...IN,W->...OUT`` or ``IN...,W->OUT...``; each kernel
    axis takes its size from the input or the output; ``output_shape`` excludes the batch
    axis and the elided ones."""
    eq = equation.replace("...", "0")
    forms = ((r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", None),
             (r"0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", "left"),
             (r"([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", "right"))
    for pattern, elide in forms:
        m = re.match(pattern, eq)
        if m:
            break
    else:
        raise ValueError(f"Invalid einsum equation {equation!r}. Equations must be in the form "
                         f"[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")
    ins, ws, outs = m.groups()
    input_shape = tuple(input_shape)
    elided = len(input_shape) - len(ins)
    out = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    out.insert(0, input_shape[0])
    if elided > 0 and elide == "left":
        for i in range(1, elided):
            out.insert(i, input_shape[i])
    elif elided > 0 and elide == "right":
        out.extend(input_shape[len(input_shape) - elided:])
    if elide == "left":
        in_at = {d: i + elided for i, d in enumerate(ins)}
        out_at = {d: i + elided for i, d in enumerate(outs)}
    else:
        in_at = {d: i for i, d in enumerate(ins)}
        out_at = {d: i for i, d in enumerate(outs)}
    for d, i in in_at.items():
        if d in out_at and out[out_at[d]] is not None and out[out_at[d]] != input_shape[i]:
            raise ValueError(f"Input shape and output shape do not match at shared dimension "
                             f"{d!r}. Input shape is {input_shape[i]}, and output shape is "
                             f"{out[out_at[d]]}.")
    for d in outs:
        if d not in ins and d not in ws:
            raise ValueError(f"Dimension {d!r} was specified in the output {outs!r} but has no "
                             f"corresponding dim in the input spec {ins!r} or weight spec "
                             f"{ws!r}")
    kernel = []
    for d in ws:
        if d in in_at:
            kernel.append(input_shape[in_at[d]])
        elif d in out_at:
            kernel.append(out[out_at[d]])
        else:
            raise ValueError(f"Weight dimension {d!r} did not have a match in either the input "
                             f"spec {ins!r} or the output spec {outs!r}. For this layer, the "
                             f"weight must be fully specified.")
    bias = None
    if bias_axes is not None:
        for d in bias_axes:
            if d not in outs:
                raise ValueError(f"Bias dimension {d!r} was requested, but is not a part of the "
                                 f"output specification {outs!r}")
        start = min(outs.find(d) for d in bias_axes)
        shift = elided if elide == "left" else 0
        bias = [out[outs.index(d) + shift] if d in bias_axes else 1 for d in outs[start:]]
        if elide != "left":
            bias += [1] * max(elided, 0)
    return tuple(kernel), None if bias is None else tuple(bias), tuple(out)


class EinsumDense(Layer):
    """Mirrors ``tf.keras.layers.experimental.EinsumDense(equation, output_shape,
    activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
    bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
    activity_regularizer=None, kernel_constraint=None, bias_constraint=None)`` (TF 2.4): a
    dense layer as ``einsum(equation, inputs, kernel)`` (+ a bias over ``bias_axes``)."""

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.equation = equation
        self.partial_output_shape = (output_shape,) if isinstance(output_shape, int) \
            else tuple(output_shape)
        self.bias_axes = bias_axes
        set_weight_options(self, **weight_options(locals()))

    def build(self, input_shape):
        kshape, bshape, self.full_output_shape = _einsum_shapes(
            self.equation, self.bias_axes, tuple(input_shape), self.partial_output_shape)
        self.kernel = add_option_weight(self, "kernel", kshape)
        self.bias = add_option_weight(self, "bias", bshape) if bshape is not None else None
        super().build(input_shape)

    def call(self, inputs):
        y = tnp.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y) if self.activation is not None else y

    def compute_output_shape(self, input_shape):
        return _einsum_shapes(self.equation, self.bias_axes, tuple(input_shape),
                              self.partial_output_shape)[2]

    def get_config(self):
        return {**super().get_config(), "equation": self.equation,
                "output_shape": list(self.partial_output_shape), "bias_axes": self.bias_axes,
                **weight_options_config(self, "activation", *_DENSE_WEIGHT_ARGS)}


class _Cauchy:
    """The ``"laplacian"`` kernel of RandomFourierFeatures: Cauchy draws, ``tan(pi (u - 1/2))``
    (the Fourier transform of the Laplacian kernel)."""

    def __call__(self, shape, dtype="float32"):
        from ..utils.random import get_rng
        u = get_rng().random(shape)
        return tnp.asarray(_np.tan(_np.pi * (u - 0.5)).astype(dtype))

    def get_config(self):
        return {}


class RandomFourierFeatures(Layer):
    """Mirrors ``tf.keras.layers.experimental.RandomFourierFeatures(output_dim,
    kernel_initializer="gaussian", scale=None, trainable=False, name=None)`` (TF 2.4):
    ``cos(x @ (unscaled_kernel / kernel_scale) + bias)``, the kernel drawn from N(0, 1)
    ("gaussian") or a Cauchy distribution ("laplacian"), the bias from U[0, 2 pi), neither
    trained; ``kernel_scale`` (default ``sqrt(input_dim / 2)`` for "gaussian", else 1) is
    trained when ``trainable``. Computes in float32, as TF."""

    _KINDS = ("gaussian", "laplacian")

    def __init__(self, output_dim, kernel_initializer="gaussian", scale=None, trainable=False,
                 name=None, **kwargs):
        if isinstance(output_dim, bool) or not isinstance(output_dim, int) or output_dim <= 0:
            raise ValueError(f"`output_dim` should be a positive integer. Given: {output_dim}.")
        if isinstance(kernel_initializer, str) and kernel_initializer.lower() not in self._KINDS:
            raise ValueError(f"Unsupported kernel type: '{kernel_initializer}'. Supported "
                             f"kernel types: {list(self._KINDS)}.")
        if scale is not None and scale <= 0.0:
            raise ValueError(f"When provided, `scale` should be a positive float. Given: "
                             f"{scale}.")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.output_dim = output_dim
        self.kernel_initializer = kernel_initializer
        self.scale = scale

    def build(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) != 2:
            raise ValueError(f"The rank of the input tensor should be 2. Got {len(shape)} "
                             f"instead.")
        if shape[1] is None:
            raise ValueError("The last dimension of the inputs to `RandomFourierFeatures` "
                             "should be defined. Found `None`.")
        d = int(shape[1])
        init = self.kernel_initializer
        if isinstance(init, str):
            init = _initializers.RandomNormal(stddev=1.0) if init.lower() == "gaussian" \
                else _Cauchy()
        self.unscaled_kernel = self.add_weight("unscaled_kernel", (d, self.output_dim),
                                               initializer=init, dtype="float32",
                                               trainable=False)
        self.bias = self.add_weight("bias", (self.output_dim,), dtype="float32",
                                    initializer=_initializers.RandomUniform(0.0, 2 * math.pi),
                                    trainable=False)
        if self.scale is None:
            gaussian = isinstance(self.kernel_initializer, str) and \
                self.kernel_initializer.lower() == "gaussian"
            self.scale = math.sqrt(d / 2.0) if gaussian else 1.0
        self.kernel_scale = self.add_weight("kernel_scale", (1,), dtype="float32",
                                            initializer=_initializers.Constant(self.scale),
                                            trainable=True)
        super().build(input_shape)

    def call(self, inputs):
        x = tnp.asarray(inputs).astype("float32")
        kernel = (1.0 / self.kernel_scale) * self.unscaled_kernel
        return tnp.cos(x @ kernel + self.bias)

    def compute_output_shape(self, input_shape):
        return (tuple(input_shape)[0], self.output_dim)

    def get_config(self):
        init = self.kernel_initializer
        return {**super().get_config(), "output_dim": self.output_dim,
                "kernel_initializer": init if isinstance(init, str) else _serialize(init),
                "scale": self.scale}
