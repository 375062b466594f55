"""Hand-written operations on backend arrays that compiled functions can hold: ``backend_op``.

An operation of tnp_train written on backend arrays (a convolution's im2col and GEMM, the fused
recurrent kernel, a normalization) is a ``custom_gradient`` op: ``f(*args)`` computes on the
backend arrays of its arguments and returns ``(y, grad_fn)``, where ``grad_fn`` holds the
forward's caches. Eagerly, :func:`backend_op` is exactly that: one tape node.

While a thread traces a function (``tt.function``, the compiled ``fit``), the tracer cannot
follow backend code, so the op becomes a *primitive* of the program instead
(``tnp.extend.primitive``): the forward is ONE node, which runs ``f`` at every call and whose
``grad_fn`` (caches included) is an opaque value of the program; the tape records a node whose
rule is, when the backward pass is traced, ONE more node that calls that run's ``grad_fn`` on
the cotangents (and one small node per input gradient the tape asks for, where ``grad_fn``
computes them lazily): the compiled step runs the same kernels, in the same order, as the eager
step.

A tape that records *while* the backward pass runs (a gradient of a gradient) cannot
differentiate a primitive's backward: that signature then runs eagerly, where the op's
recorded formulation serves it (``hand_written_backward``).
"""
from __future__ import annotations

import functools

from tnp import ndarray
from tnp.extend import primitive as _primitive, tracing as _tracing

from .recording import needs_gradient, paused, record_custom, recording
from .tape import _CustomRule

__all__ = ["backend_op"]


def backend_op(name, has_aux=False):
    """Decorator for an op ``f(*args) -> (y, grad_fn)`` (``(y, grad_fn, aux)`` with
    ``has_aux``: ``aux``, arrays that are not differentiated, is returned beside ``y``)
    computed on backend arrays; ``grad_fn(*dys)`` gives one cotangent (or None) per argument.
    One tape node eagerly (as ``custom_gradient``); a primitive of the program, forward and
    backward, while tracing (see the module docstring). ``f`` must read arrays only through
    its arguments: it may close over Python values, never over arrays."""
    def decorate(f):
        @functools.wraps(f)
        def op(*args):
            if _tracing():
                res = _primitive(_forward, f, *args, name=name)
                rule = _PrimitiveRule(name, res[1], args)
            else:
                with paused():   # the body is not recorded: grad_fn stands for it
                    res = f(*args)
                rule = _CustomRule(res[1])
            record_custom(args, res[0], rule)
            return (res[0], res[2]) if has_aux else res[0]
        return op
    return decorate


def _forward(f, *args):
    with paused():
        return f(*args)


def _call_grad_fn(grad_fn, *dys):
    return grad_fn(*dys)


def _entry(grads, i):
    return grads[i]


class _PrimitiveRule:
    """The rule of a traced ``backend_op`` node (the tape's rule interface, as
    ``custom_gradient``'s): ``grad_fn`` is the forward primitive's opaque value; the traced
    backward pass calls it in one primitive node, once per backward pass, and reads each input
    gradient the tape asks for (a lazily computed one in a node of its own)."""

    __slots__ = ("name", "grad_fn", "inputs", "_last", "_entries")

    def __init__(self, name, grad_fn, inputs):
        self.name = name
        self.grad_fn = grad_fn
        self.inputs = inputs
        self._last = None
        self._entries = {}

    def for_position(self, i):
        def outer(ans, *args, **kwargs):
            def inner(g):
                return self.entry(self.grads(g), i)
            return inner
        return outer

    def for_keyword(self, name):
        return None

    def grads(self, g):
        last = self._last
        if last is not None and last[0] is g:
            return last[1]
        dys = g if isinstance(g, tuple) else (g,)
        if recording():
            followed = [a for a in (*dys, *self.inputs) if isinstance(a, ndarray)]
            if any(needs_gradient(followed)):
                from tnp.extend import UnsupportedTrace

                raise UnsupportedTrace(
                    f"tnp_train: a gradient of the gradient of {self.name} (a hand-written "
                    f"backward) is not compiled; that step runs eagerly")
        gs = _primitive(_call_grad_fn, self.grad_fn, *dys, name=f"{self.name}_grad")
        self._last = (g, gs)
        self._entries = {}
        return gs

    def entry(self, gs, i):
        if isinstance(gs, (tuple, list)):       # the gradients themselves (traced arrays)
            return gs[i] if i < len(gs) else None
        # computed lazily by grad_fn (LazyGrads): one node per gradient the tape reads
        if i not in self._entries:
            self._entries[i] = _primitive(_entry, gs, i, name=f"{self.name}_grad[{i}]")
        return self._entries[i]
