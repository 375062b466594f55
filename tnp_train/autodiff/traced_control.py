"""Gradients through compiled control flow: the tapes and tnp's switch and loop nodes.

A compiled function's ``tt.cond`` / ``tt.switch_case`` / ``tt.while_loop`` on a traced decision
is one node of tnp's program holding traced sub-programs (``tnp.extend.control_switch`` /
``control_while``). A tape recording outside would see every branch's operations, so the tapes
are paused while the sub-programs are traced and each sub-program is recorded by a tape of its
own (:class:`SubRecorder`: it follows what the enclosing tapes follow). The enclosing tapes
then record the node as one hand-differentiated operation whose rule, when the backward pass is
traced, is one more control node (TF's cond_v2 / while_v2 gradients):

* a switch's backward is a switch (``control_switch_backward``) whose branch ``i`` runs branch
  ``i``'s tape backwards: each run differentiates the branch the forward run took, reading what
  that branch computed (the forward node exports it);
* a loop's backward is a loop (``control_loop_backward``) that runs the body's tape backwards
  once per forward iteration, the last first, on what that iteration computed (the forward
  loop keeps it on a stack), carrying the loop variables' cotangents and the sums of the
  gradients of what the body reads from outside.
"""
from __future__ import annotations

import tnp
from tnp import extend as _ext
from tnp.extend import is_inexact as _inexact

from . import backward as _bw
from .recording import (Recorder, activate, deactivate, needs_gradient, paused, record_custom,
                        recording, recording_tapes, thread_tapes)
from .variables import Variable

__all__ = ["switch", "while_loop", "SubRecorder"]


class SubRecorder(Recorder):
    """The tape of one traced branch or loop body: it watches whatever an enclosing tape
    follows (an array it watches, a trainable variable it would watch on access), and keeps
    those arrays read from outside the sub-program as its ``sources``."""

    def __init__(self, outer):
        super().__init__(watch_accessed_variables=False)
        self._outer = outer
        self.sources = []
        self.outputs = []
        self.params = []

    def _is_watched(self, x):
        if id(x) in self._watched:
            return True
        if _inexact(x.dtype) and any(_follows(t, x) for t in self._outer):
            self._watch_one(x)
            self.sources.append(x)
            return True
        return False

    def trace(self, fn, *args):
        """``fn(*args)`` recorded by this tape alone (the enclosing tapes are paused)."""
        tapes = thread_tapes()
        activate()
        tapes.append(self)
        self._recording = True
        try:
            return fn(*args)
        finally:
            self._recording = False
            tapes.remove(self)
            deactivate()


def _follows(tape, x):
    """Whether ``tape`` (paused) follows ``x``: watches it, or would watch it on access."""
    if isinstance(tape, SubRecorder):       # a branch or body inside another one
        return tape._is_watched(x)
    return id(x) in tape._watched or (tape._watch_accessed and isinstance(x, Variable) and
                                      x._trainable)


def _union(recs):
    seen, out = set(), []
    for r in recs:
        for s in r.sources:
            if id(s) not in seen:
                seen.add(id(s))
                out.append(s)
    return out


def _refuse_second_order(what, arrays):
    if recording() and any(needs_gradient([a for a in arrays if isinstance(a, tnp.ndarray)])):
        raise _ext.UnsupportedTrace(f"tnp_train: a gradient of the gradient of a compiled "
                                    f"{what} is not compiled; that step runs eagerly")


def _zeros(x):
    return tnp.zeros(tuple(x.shape), dtype=x.dtype)


class _ControlRule:
    """The rule of a control node on the enclosing tapes (the tape's rule interface, as
    ``custom_gradient``'s): every input's cotangent from one backward node per backward
    pass."""

    __slots__ = ("backward", "_last")

    def __init__(self, backward):
        self.backward = backward
        self._last = None

    def grads(self, g):
        last = self._last
        if last is not None and last[0] is g:
            return last[1]
        gs = self.backward(list(g) if isinstance(g, (tuple, list)) else [g])
        self._last = (g, gs)
        return gs

    def for_position(self, i):
        def outer(ans, *args, **kwargs):
            def inner(g):
                gs = self.grads(g)
                return gs[i] if i < len(gs) else None
            return inner
        return outer

    def for_keyword(self, name):
        return None


def _cotangents(outputs, dys):
    return [_zeros(o) if d is None else d for o, d in zip(outputs, dys)]


def switch(index, branches, **kwargs):
    """``tnp.extend.control_switch(index, branches, **kwargs)``, differentiated by the tapes
    that record now (the outputs depend on the arrays the branches read from outside)."""
    outer = recording_tapes()
    if not outer:
        return _ext.control_switch(index, branches, **kwargs)
    recs = [SubRecorder(outer) for _ in branches]

    def recorded(rec, fn):
        def run():
            rec.outputs = list(rec.trace(fn))
            return rec.outputs
        return run

    with paused():
        outs = _ext.control_switch(index, [recorded(r, f) for r, f in zip(recs, branches)],
                                   taped=True, **kwargs)
    sources = _union(recs)
    if not sources:
        return outs

    def backward(dys):
        dys = _cotangents(outs, dys)
        _refuse_second_order("cond", dys + sources)

        def branch(rec):
            def run():
                pairs = [(o, d) for o, d in zip(rec.outputs, dys) if _inexact(o.dtype)]
                grads = _bw.run(rec, [o for o, _ in pairs], [d for _, d in pairs])
                return [_bw.source_grad(s, grads, "zero") for s in sources]
            return run

        return _ext.control_switch_backward(outs[0], [branch(r) for r in recs])

    record_custom(sources, tuple(outs), _ControlRule(backward))
    return outs


def while_loop(cond, body, loop_vars, **kwargs):
    """``tnp.extend.control_while(cond, body, loop_vars, **kwargs)``, differentiated by the
    tapes that record now (through the loop variables and what the body reads from
    outside)."""
    outer = recording_tapes()
    if not outer:
        return _ext.control_while(cond, body, loop_vars, **kwargs)
    rec = SubRecorder(outer)

    def recorded_body(*params):
        rec.params = list(params)
        for p in params:
            if _inexact(p.dtype):
                rec._watch_one(p)
        rec.outputs = list(rec.trace(body, *params))
        return rec.outputs

    with paused():
        outs = _ext.control_while(cond, recorded_body, loop_vars, taped=True, **kwargs)
    n = len(outs)
    diff = [k for k in range(n) if _inexact(outs[k].dtype)]
    sources = _union([rec])
    if not diff and not sources:
        return outs

    def backward(dys):
        dys = _cotangents(outs, dys)
        _refuse_second_order("while_loop", dys + sources)
        m = len(diff)

        def reverse_body(*carry):
            dl, acc = carry[:m], carry[m:]
            grads = _bw.run(rec, [rec.outputs[k] for k in diff], list(dl))
            back = [_bw.source_grad(rec.params[k], grads, "zero") for k in diff]
            return back + [a + _bw.source_grad(s, grads, "zero") for a, s in zip(acc, sources)]

        carry = [dys[k] for k in diff] + [_zeros(s) for s in sources]
        res = _ext.control_loop_backward(outs[0], reverse_body, carry)
        gs = [None] * n
        for j, k in enumerate(diff):
            gs[k] = res[j]
        return gs + list(res[m:])

    record_custom(list(loop_vars) + sources, tuple(outs), _ControlRule(backward))
    return outs
