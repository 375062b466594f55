"""Loops over the first axis (``map_fn``, ``foldl``, ``foldr``) and over time (``rnn``)."""
from __future__ import annotations

import tnp

from ._common import _t, symbolic_ops

__all__ = ["foldl", "foldr", "map_fn", "rnn"]


def map_fn(fn, elems, name=None, dtype=None):
    """``fn`` applied to each slice of ``elems`` along axis 0, stacked."""
    elems = _t(elems)
    return tnp.stack([_t(fn(elems[i])) for i in range(elems.shape[0])])


def foldl(fn, elems, initializer=None, name=None):
    """``fn(acc, x)`` over ``elems`` from the first slice (which starts ``acc`` when no
    initializer is given)."""
    elems = _t(elems)
    items = [elems[i] for i in range(elems.shape[0])]
    acc = items.pop(0) if initializer is None else initializer
    for e in items:
        acc = fn(acc, e)
    return acc


def foldr(fn, elems, initializer=None, name=None):
    """``fn(acc, x)`` over ``elems`` from the last slice."""
    elems = _t(elems)
    items = [elems[i] for i in range(elems.shape[0] - 1, -1, -1)]
    acc = items.pop(0) if initializer is None else initializer
    for e in items:
        acc = fn(acc, e)
    return acc


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None, time_major=False, zero_output_for_mask=False):
    """Runs ``step_function(x_t, states + constants) -> (output, new_states)`` over the time
    axis; returns ``(last_output, outputs, new_states)``. With a ``mask`` ``(batch, time)``, a
    masked step keeps the states and repeats the previous output (zeros with
    ``zero_output_for_mask``)."""
    inputs = _t(inputs)
    if not time_major:
        inputs = tnp.swapaxes(inputs, 0, 1)
    steps = inputs.shape[0]
    if mask is not None:
        mask = _t(mask).astype(bool)
        if mask.ndim == 2:
            mask = tnp.swapaxes(mask, 0, 1) if not time_major else mask
        else:
            raise ValueError(f"rnn: mask must be (batch, time), got shape {mask.shape}")
    constants = list(constants or [])
    states = list(initial_states)
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, prev = [], None
    for t in order:
        out, new_states = step_function(inputs[t], states + constants)
        new_states = list(new_states)
        if mask is not None:
            m = mask[t]

            def keep(new, old):
                mm = tnp.reshape(m, m.shape + (1,) * (new.ndim - 1))
                return tnp.where(mm, new, old)

            if prev is None:
                prev = tnp.zeros_like(out)
            out = keep(out, tnp.zeros_like(out) if zero_output_for_mask else prev)
            new_states = [keep(n, o) for n, o in zip(new_states, states)]
        outputs.append(out)
        prev = out
        states = new_states
    stacked = tnp.stack(outputs, axis=0)
    if not time_major:
        stacked = tnp.swapaxes(stacked, 0, 1)
    return outputs[-1], stacked, states


symbolic_ops(globals())
