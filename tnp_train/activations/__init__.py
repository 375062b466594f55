"""Activations (``tt.activations``), mirroring ``tf.keras.activations`` (TF 2.4 names and
defaults; ``leaky_relu``, ``mish``, ``silu`` and ``log_softmax`` follow Keras 3).

Each activation is tnp code (the tape differentiates it) except where a stable formula would
record several small operations or produce ``inf * 0`` in its gradient: ``sigmoid``,
``softplus``, ``gelu`` (exact), ``softmax`` and ``log_softmax`` are one tape node each
(``tt.custom_gradient``). The backward of ``sigmoid`` and ``softplus`` is tnp code on the
node's output/input; that of ``gelu``, ``softmax`` and ``log_softmax`` computes on the backend
arrays, and the same derivative written in tnp takes over when the backward is itself
differentiated (``tnp_train.autodiff.tape.hand_written_backward``), so higher-order gradients
stay correct. ``relu`` with its default arguments is ``tnp.maximum(x, 0)``: one node.

Every activation runs on its input's device: the one-node ones compute with that device's array
module (``tnp.extend.array_module(x)``: NumPy, or CuPy on a GPU) on the backend array, never on
a host copy (``erf`` is ``tnp_train.ops.special.erf``: NumPy-only code on the CPU, SciPy not
needed, ``cupyx.scipy.special.erf`` on a GPU), and their outputs and first-order gradients
are wrapped on the input's device (also outside a ``tnp.default_device`` block); the others
are tnp operations, which follow their operands.

Float16/bfloat16 inputs: ``softmax``/``log_softmax`` compute in float32 and cast back (Keras's
rule for numerically sensitive operations); the others compute in the input's dtype.
"""
from __future__ import annotations

import math
import weakref

import numpy as _np

import tnp
from tnp.extend import (
    array_module as _array_module, backend_array as _backend, device_of as _device_of,
    is_floating, is_inexact as _is_inexact, tracing as _tracing, wrap as _wrap,
)

from ..autodiff import custom_gradient
from ..autodiff.primitive import backend_op
from ..autodiff.tape import hand_written_backward
from ..ops.special import erf as _erf_b
from ..utils.serialization import (builtin_objects, deserialize_keras_object,
                                   serialize_keras_object)

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "sigmoid",
           "hard_sigmoid", "softplus", "softsign", "tanh", "softmax", "log_softmax",
           "exponential", "linear", "mish", "get", "serialize", "deserialize"]

_LOW_PRECISION = ("float16", "bfloat16")


def _arr(x):
    return x if isinstance(x, tnp.ndarray) else tnp.asarray(x)


def _device(x):
    """The device of tnp array ``x`` and its array module (``xp``: NumPy or CuPy)."""
    dev = _device_of(x)
    return dev, _array_module(dev)


def _float_b(x):
    """The backend array of tnp array ``x`` in a floating dtype (integers become float32)."""
    a = _backend(x)
    return a if _is_inexact(a.dtype) else a.astype(_np.float32)


def _float_t(x):
    """Tnp array ``x`` in a floating dtype (integers become float32): :func:`_float_b` in tnp
    operations, for a function being compiled, where the backend array cannot be read."""
    return x if _is_inexact(x.dtype) else x.astype(_np.float32)


def _on(g, dev, xp):
    """The backend array of cotangent ``g`` on ``dev`` (moved there if it is elsewhere)."""
    if isinstance(g, tnp.ndarray):
        return _backend(g if _device_of(g) is dev else g.to_device(dev))
    return xp.asarray(g)


def _out(xp, r, dev):
    """Backend result ``r`` as a tnp array on ``dev`` (a 0-d result stays an array, as
    ``tnp.asarray`` makes it)."""
    return _wrap(xp.asarray(r), dev)


# ---------------------------------------------------------------------- piecewise linear
def relu(x, alpha=0.0, max_value=None, threshold=0):
    """Mirrors ``tf.keras.activations.relu(x, alpha=0., max_value=None, threshold=0)``:
    ``x`` for ``threshold < x < max_value``, ``max_value`` above it, ``alpha * (x - threshold)``
    below ``threshold``."""
    x = _arr(x)
    if alpha == 0 and max_value is None and threshold == 0:
        return tnp.maximum(x, 0)
    if max_value is not None and max_value < 0:
        raise ValueError(f"relu: max_value must be non-negative, got {max_value}")
    if threshold != 0:
        y = tnp.where(x > threshold, x, 0)
    else:
        y = tnp.maximum(x, 0)
    if max_value is not None:
        # TF clips to [0, max_value]: with a negative threshold, x in (threshold, 0) gives 0
        y = tnp.clip(y, 0, max_value) if threshold < 0 else tnp.minimum(y, max_value)
    if alpha != 0:
        y = y - alpha * tnp.maximum(threshold - x, 0)
    return y


def relu6(x):
    """``min(max(x, 0), 6)``; mirrors ``tf.nn.relu6`` / Keras 3 ``activations.relu6``."""
    return tnp.minimum(tnp.maximum(_arr(x), 0), 6)


def leaky_relu(x, negative_slope=0.2):
    """``x`` if ``x > 0`` else ``negative_slope * x``; mirrors Keras 3
    ``activations.leaky_relu(x, negative_slope=0.2)``."""
    x = _arr(x)
    return tnp.where(x > 0, x, x * negative_slope)


def elu(x, alpha=1.0):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``; mirrors ``tf.keras.activations.elu``."""
    x = _arr(x)
    # expm1 of the non-positive part only: the untaken branch never overflows (no inf * 0 in
    # the gradient)
    return tnp.where(x > 0, x, alpha * tnp.expm1(tnp.minimum(x, 0)))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """``scale * elu(x, alpha)`` with the self-normalising constants; mirrors
    ``tf.keras.activations.selu``."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def hard_sigmoid(x):
    """``clip(0.2 * x + 0.5, 0, 1)``; mirrors ``tf.keras.activations.hard_sigmoid`` (TF 2.4's
    slope 0.2)."""
    return tnp.clip(0.2 * _arr(x) + 0.5, 0.0, 1.0)


def linear(x):
    """The identity; mirrors ``tf.keras.activations.linear``."""
    return x


def tanh(x):
    """Mirrors ``tf.keras.activations.tanh``."""
    return tnp.tanh(_arr(x))


def exponential(x):
    """Mirrors ``tf.keras.activations.exponential``."""
    return tnp.exp(_arr(x))


def softsign(x):
    """``x / (1 + |x|)``; mirrors ``tf.keras.activations.softsign``."""
    x = _arr(x)
    return x / (1 + tnp.abs(x))


# ---------------------------------------------------------------------- one-node activations
def _sigmoid_b(xp, a):
    # exp of -|a| only: no overflow for any input
    e = xp.exp(-xp.abs(a))
    return xp.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


@custom_gradient
def _sigmoid(x):
    if _tracing():
        # a compiled function: the same operations in tnp, which the tracer follows
        y = _sigmoid_b(tnp, _float_t(x))
    else:
        dev, xp = _device(x)
        y = _out(xp, _sigmoid_b(xp, _float_b(x)), dev)

    def grad(g):
        return g * y * (1 - y)  # on the output: an enclosing tape differentiates it again
    return y, grad


def sigmoid(x):
    """``1 / (1 + exp(-x))``, stable for every input; mirrors ``tf.keras.activations.sigmoid``.
    One tape node. The output remembers its input (:func:`logits_of`), so a
    ``binary_crossentropy`` of it is computed from the logits, as Keras does."""
    x = _arr(x)
    return _remember_logits(_sigmoid(x), "sigmoid", x)


# ------------------------------------------------------------ the logits behind an output
# Keras computes the cross-entropy of a sigmoid or softmax output from the activation's input
# (TF 2.4 in fit and evaluate, where it reads the graph; tf-keras through `_keras_logits`), so
# a saturated unit still gets its gradient (-1 for a confidently wrong one, where clipped
# probabilities give 0 and the unit never recovers). tnp arrays take no attributes: the
# outputs of `sigmoid` and `softmax` are remembered here, by identity, for as long as they live.
_LOGITS = {}


class _OutputRef(weakref.ref):
    """A weak reference that knows its registry key (one shared callback, no closure per call:
    this runs on every sigmoid and softmax)."""
    __slots__ = ("key",)


def _forget(ref):
    _LOGITS.pop(ref.key, None)


def _remember_logits(out, kind, x, axis=-1):
    try:
        ref = _OutputRef(out, _forget)
    except TypeError:       # not weak-referenceable (a foreign array type): nothing remembered
        return out
    ref.key = key = id(out)
    _LOGITS[key] = (ref, kind, x, axis)
    return out


def logits_of(y, kind):
    """``(logits, axis)`` when ``y`` is, itself, the output of ``sigmoid`` or ``softmax``
    (``kind``) on ``logits``; else None. Any operation after the activation (a cast, a slice)
    gives a new array, which has none, as in Keras."""
    entry = _LOGITS.get(id(y))
    if entry is None or entry[0]() is not y or entry[1] != kind:
        return None
    return entry[2], entry[3]


@custom_gradient
def _softplus(x):
    if _tracing():
        a = _float_t(x)
        y = tnp.logaddexp(0, a).astype(a.dtype, copy=False)
    else:
        dev, xp = _device(x)
        a = _float_b(x)
        y = _out(xp, xp.logaddexp(0, a).astype(a.dtype, copy=False), dev)

    def grad(g):
        return g * sigmoid(x)
    return y, grad


def softplus(x):
    """``log(1 + exp(x))``, stable for every input; mirrors ``tf.keras.activations.softplus``.
    One tape node."""
    return _softplus(_arr(x))


def silu(x):
    """``x * sigmoid(x)`` (swish); mirrors ``tf.keras.activations.swish`` / Keras 3 ``silu``."""
    x = _arr(x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    """``x * tanh(softplus(x))``; mirrors Keras 3 ``activations.mish``."""
    x = _arr(x)
    return x * tnp.tanh(softplus(x))


_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@backend_op("gelu")   # in a compiled function: one node forward, one backward (the eager kernels)
def _gelu_exact(x):
    dev, xp = _device(x)
    a = _float_b(x)
    wide = a.astype(_np.float64) if a.dtype != _np.float64 else a
    cdf = 0.5 * (1.0 + _erf_b(xp, wide * _INV_SQRT2))
    y = _out(xp, (wide * cdf).astype(a.dtype, copy=False), dev)

    # (one cotangent per argument, as a tuple: backend_op's rule)
    def grad(g):
        d = cdf + wide * _INV_SQRT_2PI * xp.exp(-0.5 * wide * wide)
        return (g * _out(xp, d.astype(a.dtype, copy=False), dev),)

    def recorded(g):   # a higher-order gradient: the derivative written in tnp
        from_erf = 0.5 * (1.0 + _erf_tnp(x * _INV_SQRT2))
        return (g * (from_erf + x * _INV_SQRT_2PI * tnp.exp(-0.5 * x * x)),)
    return y, hand_written_backward("gelu", grad, (x,), recorded)


@custom_gradient
def _erf_tnp(x):
    dev, xp = _device(x)
    a = _float_b(x)
    y = _out(xp, _erf_b(xp, a).astype(a.dtype, copy=False), dev)

    def grad(g):
        return g * (2.0 / math.sqrt(math.pi)) * tnp.exp(-x * x)
    return y, grad


def gelu(x, approximate=False):
    """Gaussian error linear unit, ``x * Phi(x)``; with ``approximate=True`` the tanh form
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``. Mirrors Keras 3
    ``activations.gelu(x, approximate=False)`` (TF 2.4: ``tf.nn.gelu``)."""
    x = _arr(x)
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + tnp.tanh(c * (x + 0.044715 * (x * x * x))))
    return _gelu_exact(x)


# ---------------------------------------------------------------------- softmax
def _wide(a):
    return a.astype(_np.float32) if a.dtype.name in _LOW_PRECISION or not is_floating(a.dtype) else a


def _wide_t(x):
    return x.astype(_np.float32) if x.dtype.name in _LOW_PRECISION or \
        not is_floating(x.dtype) else x


def _traced_softmax(x, axis, log):
    """``_softmax``/``_log_softmax`` while a function is compiled: the eager operations, in the
    same order, on tnp arrays (the tracer follows them), and a backward that is the eager
    one's formula (on the wide values, as the eager backward): the eager bits."""
    a = _wide_t(x)
    z = a - tnp.max(a, axis=axis, keepdims=True)
    if log:
        w = z - tnp.log(tnp.sum(tnp.exp(z), axis=axis, keepdims=True))
    else:
        e = tnp.exp(z)
        w = e / tnp.sum(e, axis=axis, keepdims=True)
    out_dtype = x.dtype if is_floating(x.dtype) else w.dtype
    y = w.astype(out_dtype) if w.dtype != out_dtype else w

    def grad(g):
        gw = g.astype(w.dtype) if g.dtype != w.dtype else g
        if log:
            d = gw - tnp.exp(w) * tnp.sum(gw, axis=axis, keepdims=True)
        else:
            d = w * (gw - tnp.sum(gw * w, axis=axis, keepdims=True))
        return (d.astype(out_dtype) if d.dtype != out_dtype else d), None
    return y, grad


@custom_gradient
def _softmax(x, axis):
    if _tracing():
        return _traced_softmax(x, axis, log=False)
    dev, xp = _device(x)
    a = _wide(_backend(x))
    e = xp.exp(a - xp.max(a, axis=axis, keepdims=True))
    e /= xp.sum(e, axis=axis, keepdims=True)
    out_dtype = x.dtype if is_floating(x.dtype) else e.dtype
    y = _out(xp, e.astype(out_dtype, copy=False), dev)

    def grad(g):
        gw = _on(g, dev, xp).astype(e.dtype, copy=False)
        d = e * (gw - xp.sum(gw * e, axis=axis, keepdims=True))
        return _out(xp, d.astype(out_dtype, copy=False), dev), None

    def recorded(g):
        yw = y.astype(e.dtype) if y.dtype != e.dtype else y
        gw = g.astype(e.dtype) if g.dtype != e.dtype else g
        d = yw * (gw - tnp.sum(gw * yw, axis=axis, keepdims=True))
        return d.astype(out_dtype) if d.dtype != out_dtype else d, None
    return y, hand_written_backward("softmax", grad, (x, y), recorded)


def _check_axis(name, x, axis):
    if x.ndim == 0:
        raise ValueError(f"{name}: expected an input with at least one dimension, got a scalar")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{name}: axis {axis} is out of range for an input of shape {x.shape}")


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``; mirrors ``tf.keras.activations.softmax(x,
    axis=-1)``. Float16/bfloat16 inputs compute in float32 and the result is cast back. One
    tape node."""
    x = _arr(x)
    _check_axis("softmax", x, axis)
    return _remember_logits(_softmax(x, axis), "softmax", x, axis)


@custom_gradient
def _log_softmax(x, axis):
    if _tracing():
        return _traced_softmax(x, axis, log=True)
    dev, xp = _device(x)
    a = _wide(_backend(x))
    z = a - xp.max(a, axis=axis, keepdims=True)
    lse = xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))
    out = z - lse
    out_dtype = x.dtype if is_floating(x.dtype) else out.dtype
    y = _out(xp, out.astype(out_dtype, copy=False), dev)

    def grad(g):
        gw = _on(g, dev, xp).astype(out.dtype, copy=False)
        d = gw - xp.exp(out) * xp.sum(gw, axis=axis, keepdims=True)
        return _out(xp, d.astype(out_dtype, copy=False), dev), None

    def recorded(g):
        p = tnp.exp(y.astype(out.dtype) if y.dtype != out.dtype else y)
        gw = g.astype(out.dtype) if g.dtype != out.dtype else g
        d = gw - p * tnp.sum(gw, axis=axis, keepdims=True)
        return d.astype(out_dtype) if d.dtype != out_dtype else d, None
    return y, hand_written_backward("log_softmax", grad, (x, y), recorded)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis``; mirrors Keras 3 ``activations.log_softmax`` (TF
    2.4: ``tf.nn.log_softmax``). Computes in float32 for float16/bfloat16. One tape node."""
    x = _arr(x)
    _check_axis("log_softmax", x, axis)
    return _log_softmax(x, axis)


# ---------------------------------------------------------------------- lookup
_BY_NAME = {
    "relu": relu, "relu6": relu6, "leaky_relu": leaky_relu, "elu": elu, "selu": selu,
    "gelu": gelu, "silu": silu, "swish": swish, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid,
    "softplus": softplus, "softsign": softsign, "tanh": tanh, "softmax": softmax,
    "log_softmax": log_softmax, "exponential": exponential, "linear": linear, "mish": mish,
}
_NAME_OF = {id(f): n for n, f in _BY_NAME.items()}
_NAME_OF[id(swish)] = "swish"  # TF 2.4's name for it


def serialize(activation):
    """The name of a built-in activation, else its registered name (or ``{"class_name",
    "config"}`` for an object with ``get_config``); mirrors ``tf.keras.activations.serialize``."""
    name = _NAME_OF.get(id(activation))
    if name is not None:
        return name
    return serialize_keras_object(activation)


def _module_objects():
    """The built-in activations, then (as TF 2.4) the advanced-activation layers by class name:
    ``activation="LeakyReLU"`` is a ``tt.layers.LeakyReLU()``. The layers sit above this
    package: they put those classes in the serialization registry when imported (no layer
    module imported, no class name is known)."""
    return {**builtin_objects("activation"), **_BY_NAME}


def deserialize(name, custom_objects=None):
    """The activation called ``name`` (or a ``serialize`` dict), found in ``custom_objects``,
    the registered and scoped custom objects, then the built-in activations and the
    advanced-activation layers (a class name gives a new layer with its defaults, a
    ``{"class_name", "config"}`` dict the layer it describes); mirrors
    ``tf.keras.activations.deserialize``."""
    return deserialize_keras_object(name, module_objects=_module_objects(),
                                    custom_objects=custom_objects,
                                    printable_module_name="activation function")


def get(identifier):
    """An activation from its name, a callable, or None (linear); as
    ``tf.keras.activations.get``."""
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}")
