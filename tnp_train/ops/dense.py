"""``dense(x, kernel, bias, activation)``: ``act(x @ kernel + bias)`` as one tape node.

The forward is one GEMM with the bias added and ReLU applied in place on its result; the
backward is the two GEMMs and a column sum, with ReLU's mask taken from the saved output. On
float16/bfloat16 inputs the GEMM runs in float32 and the result is cast back, as tensor cores
accumulate. Any other activation is applied after, as ordinary (differentiated) tnp code.
"""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import (
    array_module, backend_array as _backend, device_of as _device_of, tracing as _tracing, wrap,
)

from ..autodiff.tape import (
    _CustomRule, gradient_destination, hand_written_backward, needs_gradient, record_custom,
    recording,
)

__all__ = ["dense"]

_LOW = (_np.dtype("float16"), _np.dtype(tnp.bfloat16))


def dense(x, kernel, bias=None, relu=False):
    """``x @ kernel (+ bias)``, ReLU'd when ``relu``; differentiable in all three arrays."""
    dev = _device_of(x)
    if _device_of(kernel) is not dev or (bias is not None and _device_of(bias) is not dev):
        raise ValueError(f"dense: inputs on {dev}, kernel on {_device_of(kernel)}"
                         + (f", bias on {_device_of(bias)}" if bias is not None else ""))
    if _tracing():
        return _dense_traced(x, kernel, bias, relu)
    xa, wa = _backend(x), _backend(kernel)
    ba = _backend(bias) if bias is not None else None
    out_dtype = _np.result_type(xa.dtype, wa.dtype)
    low = out_dtype in _LOW
    if low:
        xa32, wa32 = xa.astype(_np.float32), wa.astype(_np.float32)
    else:
        xa32, wa32 = xa, wa
    lead = xa.shape[:-1]
    x2 = xa32.reshape(-1, xa.shape[-1]) if xa.ndim != 2 else xa32
    y = x2 @ wa32
    if ba is not None:
        y += ba
    if relu:
        array_module(dev).maximum(y, 0, out=y)
    if low:
        y = y.astype(out_dtype)
    if xa.ndim != 2:
        y = y.reshape(lead + (wa.shape[-1],))
    out = wrap(y, dev)
    if recording():
        args = (x, kernel) if bias is None else (x, kernel, bias)
        need_dx = needs_gradient((x,))[0]
        has_bias = bias is not None

        def recorded(g):   # a gradient of a gradient: the same formulas in tnp, recorded
            return _backward_recorded(g, x, kernel, y, relu, has_bias, need_dx, dev)
        backward = _make_backward(xa, wa, y, relu, has_bias, need_dx, dev, kernel, bias)
        record_custom(args, out, _CustomRule(hand_written_backward("dense", backward, args,
                                                                   recorded)))
    return out


def _dense_traced(x, kernel, bias, relu):
    """The same computation in tnp operations, for a function being compiled (``tnp.jit``,
    ``tt.function``): the tracer records them, a tape differentiates them, the compiler fuses
    the bias and ReLU into the GEMM's consumer."""
    out_dtype = tnp.result_type(x.dtype, kernel.dtype)
    low = out_dtype in _LOW
    xc, wc = (x.astype(tnp.float32), kernel.astype(tnp.float32)) if low else (x, kernel)
    # inputs of another rank as ONE (rows, features) GEMM, as the eager op (a batched matmul
    # would sum the kernel's gradient batch by batch: other roundings)
    lead = tuple(x.shape[:-1])
    y = tnp.matmul(tnp.reshape(xc, (-1, x.shape[-1])) if x.ndim != 2 else xc, wc)
    if bias is not None:
        y = y + bias
    if relu:
        y = tnp.maximum(y, 0)
    if low:
        y = y.astype(out_dtype)
    return tnp.reshape(y, lead + (kernel.shape[-1],)) if x.ndim != 2 else y


def _make_backward(xa, wa, y, relu, has_bias, need_dx, dev, kernel=None, bias=None):
    def backward(g):
        ga = _backend(g) if isinstance(g, tnp.ndarray) else _np.asarray(g)
        low = ga.dtype in _LOW or wa.dtype in _LOW
        if relu:
            ga = ga * (y > 0)
        g2 = ga.reshape(-1, ga.shape[-1])
        x2 = xa.reshape(-1, xa.shape[-1])
        if low:
            g32, x32, w32 = g2.astype(_np.float32), x2.astype(_np.float32), wa.astype(_np.float32)
        else:
            g32, x32, w32 = g2, x2, wa
        # the kernel's and bias's gradients straight into a strategy's bucket when the tape
        # offers one (the same GEMM and sum, their results' storage given)
        same = not low and g32.dtype == wa.dtype and x32.dtype == wa.dtype
        into = gradient_destination(kernel, wa) if same else None
        dw = x32.T @ g32 if into is None else array_module(dev).matmul(x32.T, g32, out=into)
        # the inputs' cotangent only when a tape tracks them (not for the data batch)
        dx = wrap((g32 @ w32.T).astype(xa.dtype, copy=False).reshape(xa.shape), dev) \
            if need_dx else None
        out = [dx, wrap(dw.astype(wa.dtype, copy=False), dev)]
        if has_bias:
            into = gradient_destination(bias, wa[0]) if same else None
            db = g32.sum(axis=0) if into is None else g32.sum(axis=0, out=into)
            out.append(wrap(db.astype(wa.dtype, copy=False), dev))
        return tuple(out)
    return backward


def _backward_recorded(g, x, kernel, y, relu, has_bias, need_dx, dev):
    if relu:
        g = g * wrap((y > 0).astype(y.dtype), dev)
    g2 = tnp.reshape(g, (-1, g.shape[-1]))
    x2 = tnp.reshape(x, (-1, x.shape[-1]))
    dw = tnp.matmul(tnp.matrix_transpose(x2), g2).astype(kernel.dtype)
    dx = tnp.reshape(tnp.matmul(g2, tnp.matrix_transpose(kernel)), x.shape).astype(x.dtype) \
        if need_dx else None
    out = [dx, dw]
    if has_bias:
        out.append(tnp.sum(g2, axis=0).astype(kernel.dtype))
    return tuple(out)
