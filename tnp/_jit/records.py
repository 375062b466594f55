"""What libraries record in a trace (``tnp.extend``'s ``effect``, ``host_call``, ``observe`` and
``primitive``): nodes of the compiled program that call library code at every run, with that
run's values, instead of once while tracing. Split from :mod:`.tracer`, whose trace context
(``_state``) and placeholders they use."""
from __future__ import annotations

import threading

import numpy as np

from .._core import listeners as _listeners
from .._core.devices import CPU
from .._core.ndarray import ndarray as _ndarray
from .._core.scalar import Scalar as _Scalar
from .graph import Cap, Node, Ref
from .tracer import (NOT_TRACING, Opaque, ScalarTracer, Tracer, UnsupportedTrace, _at, _state,
                     _wrap_as, is_tracer, make_placeholder, user_location)

__all__ = ["record_effect", "record_observe", "record_call", "record_primitive",
           "record_backend_update"]


# ----------------------------------------------------------------------------- effects
def record_effect(fn, args, kwargs, name=None):
    """While this thread traces: record a node that calls ``fn(*args, **kwargs)`` at every run
    of the compiled function (traced arrays among the arguments replaced by their values then)
    and return True without calling it; otherwise return False (the caller calls ``fn`` now).

    What a library does for its effects: a write into state (a variable's update, an optimizer
    step, a metric's accumulation) must happen at every call of the compiled function, with the
    call's values, never once while tracing with the placeholders' dummies."""
    ctx = _state.ctx
    if ctx is None or ctx.thread != threading.get_ident():
        return False
    _effect_node(ctx, fn, args, kwargs, name).result = None
    return True


def record_backend_update(fn, args, writes, name=None):
    """While this thread traces: record ONE node that calls ``fn(*args)`` at every run on the
    run's backend arrays (a 'numpy' node: no wrapping) and writes ``writes`` in place (the
    node's ``writes``: the fusion and the memory plan order every read of them around it; the
    replay bumps their versions after it), and return True without calling it; otherwise
    return False (``tnp.extend.backend_update``)."""
    ctx = _state.ctx
    if ctx is None or ctx.thread != threading.get_ident():
        return False
    label = name or getattr(fn, "__qualname__", None) or type(fn).__name__
    node = Node(len(ctx.graph.nodes), f"effect:{label}", fn, "numpy",
                ctx.template(tuple(args)), {}, user_location())
    for w in writes:
        t = ctx.template(w)
        if type(t) is not Ref and type(t) is not Cap:
            raise TypeError(f"tnp.extend.backend_update: writes must be tnp arrays, got "
                            f"{type(w).__name__}")
        if t.value not in node.writes:
            node.writes.append(t.value)
    node.result = None
    ctx.graph.nodes.append(node)
    return True


def record_observe(fn, args, kwargs, level, name=None):
    """While this thread traces: record an *observation* node that calls ``fn(*args,
    **kwargs)`` at every run made while a replay observer of ``level`` or more is installed
    (see ``program.set_replay_observer``; a profiler's span markers), and return True without
    calling it; otherwise return False. It reads no traced value and writes nothing, so it
    changes neither the fusion nor the memory plan of the program; a run without an observer
    of its level does not contain it at all."""
    ctx = _state.ctx
    if ctx is None or ctx.thread != threading.get_ident():
        return False
    label = name or getattr(fn, "__qualname__", None) or type(fn).__name__
    if any(is_tracer(a) for a in (*args, *kwargs.values())):
        raise UnsupportedTrace(f"tnp.jit: the observation {label} reads a traced array"
                               + _at(user_location()))
    node = Node(len(ctx.graph.nodes), f"observe:{label}", fn, "eager", tuple(args),
                dict(kwargs), user_location())
    node.result = None
    node.observe_level = int(level)
    ctx.graph.nodes.append(node)
    return True


def _effect_node(ctx, fn, args, kwargs, name):
    """A node of trace ``ctx`` that calls ``fn`` eagerly at every run (appended to the graph)."""
    label = name or getattr(fn, "__qualname__", None) or type(fn).__name__
    node = Node(len(ctx.graph.nodes), f"effect:{label}", fn, "eager",
                ctx.template(tuple(args)), ctx.template(dict(kwargs)), user_location())
    ctx.graph.nodes.append(node)
    return node


def record_call(fn, args, kwargs, shape, dtype, name=None):
    """While this thread traces: record a node that calls ``fn(*args, **kwargs)`` at every run
    (traced arrays among the arguments replaced by their values) and uses what it returns, an
    array of ``shape`` and ``dtype``; return a traced array standing for it, without calling
    ``fn``. None when not tracing. What a library's random draws made on the host go through:
    each run draws anew, from the generator's state at that run, as an eager call does."""
    ctx = _state.ctx
    if ctx is None or ctx.thread != threading.get_ident():
        return None
    node = _effect_node(ctx, fn, args, kwargs, name)
    t = make_placeholder(np.zeros(tuple(shape), dtype))
    v = ctx.graph.new_value(t._a, "node", node=node)
    ctx.values[id(t)] = v
    ctx.keep.append(t)
    ctx.backends[v.id] = t._a
    node.outputs.append(v)
    node.result = Ref(v)
    return t


# ----------------------------------------------------------------------------- primitives
def _closure_tracers(fn):
    """Whether ``fn`` closes over a traced array (directly or in a list, tuple or dict): its
    replay would read that array's trace-time dummy instead of the run's value."""
    cells = getattr(fn, "__closure__", None) or ()
    self_ = getattr(fn, "__self__", None)
    objs = [c.cell_contents for c in cells if _cell_set(c)]
    if self_ is not None:
        objs.append(self_)
    for o in objs:
        items = o.values() if type(o) is dict else o if type(o) in (list, tuple) else (o,)
        for e in items:
            if is_tracer(e) or type(e) is Opaque:
                return True
    return False


def _cell_set(c):
    try:
        c.cell_contents
    except ValueError:
        return False
    return True


def record_primitive(fn, args, kwargs, name=None):
    """While this thread traces: ``fn(*args, **kwargs)``, a computation written on backend
    arrays, as ONE node of the program (see ``tnp.extend.primitive``); else NOT_TRACING.

    ``fn`` runs once now, on the trace-time values (tracers' dummies, captured arrays' values;
    handed over as plain tnp arrays, with this thread's trace set aside and no operation
    reported), which tells the results' structure, shapes and dtypes; the node runs it at every
    call with that call's values. Among the results, tnp arrays become traced arrays, None
    stays None, lists/tuples/dicts keep their structure, and every other object becomes an
    :class:`Opaque` value: the object each run makes, which a later primitive may be given
    (the forward's caches for its backward). An opaque value keeps the arrays its primitive
    read alive (no buffer of the program is reused under it) as long as it is read."""
    ctx = _state.ctx
    if ctx is None or ctx.thread != threading.get_ident():
        return NOT_TRACING
    where = user_location()
    label = name or getattr(fn, "__qualname__", None) or type(fn).__name__
    if any(_closure_tracers(c) for c in (fn, *args) if callable(c) and not is_tracer(c)
           and type(c) is not Opaque):
        raise UnsupportedTrace(f"tnp.jit: the primitive {label} closes over a traced array; "
                               f"pass it as an argument" + _at(where))
    node = Node(len(ctx.graph.nodes), f"primitive:{label}", fn, "eager",
                ctx.template(tuple(args)), ctx.template(dict(kwargs)), where)
    reads = {}
    for v in node.inputs():
        for d in v.deps:
            reads.setdefault(d.id, d)
    node.reads = tuple(reads.values())
    memo = {}
    now_args = _trace_values(args, memo)
    now_kwargs = _trace_values(kwargs, memo)
    _state.ctx = None
    try:
        with _listeners.reporting_suspended():
            r = fn(*now_args, **now_kwargs)
    finally:
        _state.ctx = ctx
    deps = tuple({v.id: v for v in node.inputs()}.values())
    out, node.result = _primitive_result(ctx, node, r, deps, label, where)
    ctx.graph.nodes.append(node)
    return out


def _trace_values(x, memo):
    """The trace-time values a primitive's ``fn`` is called with while tracing: a tracer as a
    plain tnp array over its dummy (one per tracer), an opaque value as its trace-time object."""
    t = type(x)
    if t is Tracer or t is ScalarTracer:
        w = memo.get(id(x))
        if w is None:
            w = memo[id(x)] = _wrap_as(_ndarray if t is Tracer else _Scalar, x._a)
        return w
    if t is Opaque:
        return x.trace_value
    if t is list or t is tuple:
        return t(_trace_values(e, memo) for e in x)
    if t is dict:
        return {k: _trace_values(e, memo) for k, e in x.items()}
    return x


def _primitive_result(ctx, node, r, deps, label, where):
    """``(traced result, result template)`` of a primitive's trace-time result ``r``."""
    t = type(r)
    if r is None:
        return None, None
    if t is list or t is tuple:
        pairs = [_primitive_result(ctx, node, e, deps, label, where) for e in r]
        return t(p[0] for p in pairs), t(p[1] for p in pairs)
    if t is dict:
        pairs = {k: _primitive_result(ctx, node, e, deps, label, where) for k, e in r.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if isinstance(r, _ndarray):
        if r._dev is not CPU:
            raise UnsupportedTrace(f"tnp.jit: the primitive {label} gave an array on {r._dev}"
                                   + _at(where))
        a = r._a
        tr = _wrap_as(ScalarTracer if isinstance(a, np.generic) else Tracer, a)
        v = ctx.graph.new_value(a, "node", node=node)
        ctx._share_storage(v, a, node)
        ctx.values[id(tr)] = v
        ctx.keep.append(tr)
        ctx.backends[v.id] = a
        node.outputs.append(v)
        return tr, Ref(v)
    if isinstance(r, np.ndarray):
        raise UnsupportedTrace(f"tnp.jit: the primitive {label} gave a NumPy array; give a tnp "
                               f"array (tnp.extend.wrap)" + _at(where))
    o = Opaque(r, label)
    v = ctx.graph.new_value(np.empty((), object), "node", node=node)
    v.opaque = True
    v.deps = deps
    ctx.values[id(o)] = v
    ctx.keep.append(o)
    node.outputs.append(v)
    return o, Ref(v)
