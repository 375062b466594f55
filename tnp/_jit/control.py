"""Control flow in a compiled function: branches and loops whose decision is a traced value.

Python's ``if`` and ``while`` see only what is known while tracing. A library that wants a
decision made at every run (``tt.cond``, ``tt.while_loop``, AutoGraph) calls :func:`switch` or
:func:`while_loop` while the thread traces. Each branch, loop condition and loop body is traced
into its own list of nodes (a *sub-program*, compiled like the function itself, fused kernels
included), and one node of the enclosing program holds them:

* a **switch node** reads the branch index at every run and runs only that branch's
  sub-program: what the other branches would do (writes, effects, random draws) does not
  happen, and Python code in every branch ran once, while tracing (as in TF);
* a **loop node** runs the condition's sub-program, then the body's, on the loop variables
  until the condition is false (or ``maximum_iterations`` is reached); effects inside the body
  happen once per executed iteration.

A sub-program reads values of the enclosing program (the node's free values) and captured
arrays, and writes into them as eagerly; a value made inside a branch or a body exists only
there (using it outside is refused). What the nodes return is always new memory: an output
that would alias one of the node's inputs is copied, so the enclosing program's buffer reuse
stays valid.

Gradients (:func:`switch_backward`, :func:`loop_backward`): a library that differentiates a
control node (tnp_train's tapes, which then ask for the node with ``taped=True``; otherwise a
control node is refused while another operation listener records) traces the backward as one
more control node: a switch whose branch ``i`` is branch ``i``'s backward, or a loop that runs
the body's backward once per forward iteration, last iteration first. What a backward reads of
its forward sub-program (the values a VJP rule saved) is *exported*: the forward node gives
one more, opaque, output, the record of its run (the branch taken and its exported values; for
a loop, one entry per iteration, a stack, as TF's while_v2 keeps), which the backward node
reads, so nothing is computed twice and random draws are not repeated.
"""
from __future__ import annotations

import numpy as np

from .._core import listeners as _listeners
from .._core.ndarray import ndarray as _ndarray
from .graph import Cap, Graph, Node, Ref, walk_template
from . import tracer as _tr

__all__ = ["switch", "while_loop", "is_traced", "switch_backward", "loop_backward"]


class _Scope:
    """One sub-program being traced (a branch, a loop condition or body); ``driver`` and
    ``index``: once its node is made, the node's driver and which of its subs it is."""

    __slots__ = ("what", "driver", "index")

    def __init__(self, what):
        self.what = what
        self.driver = None
        self.index = None


def is_traced(x):
    """Whether ``x`` is a tnp array whose value a compiled function only knows when it runs:
    any tnp array while this thread traces (a traced value, or an array read from outside,
    which may hold other values at the next call)."""
    return isinstance(x, _ndarray) and _tr.tracing()


def forget(x):
    """``x`` (a traced value) will not be used again: drop it from this thread's trace."""
    ctx = _tr._state.ctx
    if ctx is not None and _tr.tracing():
        ctx.values.pop(id(x), None)
        ctx.ambiguous.discard(id(x))


def _context(what, taped=False):
    ctx = _tr._state.ctx
    if ctx is None or not _tr.tracing():
        raise RuntimeError(f"tnp.jit: {what} is for a function being traced")
    if ctx.vectorize_rules is not None:
        raise _tr.UnsupportedTrace(f"tnp.vmap: {what} with a traced decision has no batching "
                                   f"rule" + _tr._at(_tr.user_location()))
    mine = ctx.listener
    if not taped and any(e[1] is not mine for e in _listeners._blocking):
        raise _tr.UnsupportedTrace(
            f"tnp.jit: {what} with a traced decision while another operation listener records "
            f"(a GradientTape inside the compiled function): the tape would see every branch; "
            f"the function runs eagerly instead" + _tr._at(_tr.user_location()))
    return ctx


def _as_array(x):
    if isinstance(x, _ndarray):
        return x
    import tnp

    return tnp.asarray(x)


def _final(exc):
    """Mark ``exc`` as the user's error, raised to the caller of the compiled function (not
    taken for a failure of the placeholders' dummy values, which runs the call eagerly)."""
    exc.tnp_trace_final = True
    return exc


def _checked(check, *args):
    try:
        check(*args)
    except (ValueError, TypeError) as e:
        raise _final(e)


def _contiguous(b):
    # not numpy.ascontiguousarray, which makes a 0-d array 1-d
    if isinstance(b, np.ndarray) and not b.flags.c_contiguous:
        return b.copy(order="C")
    return b


def _trace_sub(ctx, what, fn, params):
    """Trace ``fn(*params)`` into its own node list; ``params``: the backend values of the
    sub-program's own inputs (loop variables), made placeholders here. Returns ``(nodes,
    param values, output templates, outputs)``; ``fn`` returns a flat sequence of values."""
    saved = ctx.graph.nodes
    ctx.graph.nodes = []
    scope = _Scope(what)
    ctx.scopes.append(scope)
    start = len(ctx.graph.values)
    try:
        tracers, pvals = [], []
        for b in params:
            t = _tr.make_placeholder(_contiguous(b))
            v = ctx.graph.new_value(t._a, "param")
            ctx.values[id(t)] = v
            ctx.keep.append(t)
            ctx.backends[v.id] = t._a
            tracers.append(t)
            pvals.append(v)
        outs = [_as_array(x) for x in fn(*tracers)]
        templates = [ctx.template(x) for x in outs]
    finally:
        nodes = ctx.graph.nodes
        ctx.graph.nodes = saved
        ctx.scopes.pop()
    for vid in range(start, len(ctx.graph.values)):
        ctx.scope_of.setdefault(vid, scope)
    ctx.closed_scopes.append(scope)
    # tnp's shared True/False scalars made inside: unusable outside, so forgotten (a later
    # operation giving the same object is then not ambiguous)
    for oid in list(ctx.shared):
        v = ctx.values.get(oid)
        if v is not None and ctx.scope_of.get(v.id) is scope:
            del ctx.values[oid]
            ctx.ambiguous.discard(oid)
    return nodes, pvals, templates, outs


class _Sub:
    """A traced sub-program: its graph (inputs: its own parameters, then the free values it
    reads), and the compiled program once built. ``imports``: (for a backward) the scope of the
    forward sub-program whose values it reads: they are made its leading parameters
    (``imported``), fed from the forward node's record."""

    def __init__(self, name, nodes, params, outputs, imports=None, scope_of=None):
        g = Graph()
        g.fn_name = name
        g.nodes = nodes
        self.all_nodes = list(nodes)        # build_program prunes g.nodes; exports need them all
        self.outputs = tuple(outputs)
        made = {v.id for n in nodes for v in n.outputs} | {v.id for v in params}
        free, caps, seen = [], [], set()
        self.imported = []

        def see(leaf):
            v = leaf.value
            if v.id in made or v.id in seen:
                return
            seen.add(v.id)
            if type(leaf) is Cap:
                caps.append((v, leaf.obj))
            elif imports is not None and scope_of.get(v.id) is imports:
                self.imported.append(v)
            else:
                free.append(v)

        for n in nodes:
            walk_template(n.args, see)
            walk_template(n.kwargs, see)
        for t in outputs:
            walk_template(t, see)
        g.inputs = self.imported + list(params) + free
        g.captures = [v for v, _ in caps]
        g.capture_objs = [o for _, o in caps]
        g.output = tuple(outputs)
        self.graph = g
        self.free = free                # outer values it reads (Refs)
        self.caps = caps                # (value, object) read from outside (Caps)
        self.writes = [w for n in nodes for w in n.writes if w.id not in made]
        self.effectful = any(_keeps(n) for n in nodes)
        self.exports = []               # values a backward reads, output after the others
        self.program = None
        self.fuse = True

    def build(self, fuse):
        from .program import build_program

        self.fuse = fuse
        self.graph.nodes = list(self.all_nodes)
        self.graph.output = self.outputs + tuple(Ref(v) for v in self.exports)
        self.program = build_program(self.graph, fuse=fuse)

    def export(self, values):
        """The positions among this sub's exports of ``values`` (made inside it), added to its
        outputs (the program is rebuilt) where new."""
        index = {v.id: k for k, v in enumerate(self.exports)}
        grew = False
        out = []
        for v in values:
            if v.id not in index:
                index[v.id] = len(self.exports)
                self.exports.append(v)
                grew = True
            out.append(index[v.id])
        if grew:
            self.build(self.fuse)
        return tuple(out)


def _keeps(n):
    from .program import _keeps as keeps

    return keeps(n)


def _outer_args(ctx, subs, extra=()):
    """The node's argument template (``extra`` first, then the union of the subs' free values
    and captures) and, per sub, the positions of its free values among the node's arguments."""
    order, index = [], {}
    for s in subs:
        for v in s.free:
            if v.id not in index:
                index[v.id] = len(order)
                order.append(Ref(v))
    # a capture is also a free value of the node (its Cap leaf tells the enclosing program to
    # read it), though the sub-program reads the object itself
    for s in subs:
        for v, obj in s.caps:
            if v.id not in index:
                index[v.id] = len(order)
                order.append(Cap(v, obj))
    k = len(extra)
    picks = [tuple(k + index[v.id] for v in s.free) for s in subs]
    return tuple(extra) + tuple(order), picks


def _node(ctx, name, driver, args, subs, out_backends, where):
    node = Node(len(ctx.graph.nodes), name, driver, "control", args, {}, where)
    node.sub = driver
    driver.node = node
    driver.record = None
    # the scopes of its subs, just closed (a node made inside one of them took its own)
    scopes = ctx.closed_scopes[-len(subs):] if subs else []
    if subs:
        del ctx.closed_scopes[-len(subs):]
    for i, sc in enumerate(scopes):
        sc.driver, sc.index = driver, i
    driver.scopes = scopes
    driver.effectful = any(s.effectful for s in subs)
    seen = set()
    for s in subs:
        for w in s.writes:
            if w.id not in seen:
                seen.add(w.id)
                node.writes.append(w)
    results, outs = [], []
    for b in out_backends:
        t = _tr.make_placeholder(_contiguous(b))
        v = ctx.graph.new_value(t._a, "node", node=node)
        ctx.values[id(t)] = v
        ctx.keep.append(t)
        ctx.backends[v.id] = t._a
        node.outputs.append(v)
        results.append(Ref(v))
        outs.append(t)
    node.result = tuple(results)
    ctx.graph.nodes.append(node)
    return outs


def _kinds(values):
    """How each output is handed on: 'scalar' (a NumPy scalar) or 'array'."""
    return tuple("scalar" if v.scalar else "array" for v in values)


def _settle(outs, kinds, inputs):
    """Outputs as the enclosing program expects them: of the traced kind (NumPy scalar or
    array), C-contiguous, and never memory of one of the node's inputs."""
    r = []
    for a, kind in zip(outs, kinds):
        if kind == "scalar":
            if not isinstance(a, np.generic):
                a = a[()]
        else:
            if isinstance(a, np.generic):
                a = np.asarray(a)
            if not a.flags.c_contiguous:
                a = a.copy(order="C")
            else:
                for x in inputs:
                    if isinstance(x, np.ndarray) and np.may_share_memory(a, x):
                        a = a.copy()
                        break
        r.append(a)
    return tuple(r)


# ----------------------------------------------------------------------------- switch
class _SwitchDriver:
    """The replay of a switch node: ``(index, *free values)`` -> the taken branch's outputs."""

    def __init__(self, subs, picks, default, kinds, as_bool):
        self.subs = subs
        self.picks = picks
        self.default = default
        self.kinds = kinds
        self.as_bool = as_bool

    def __call__(self, index, *free):
        if self.as_bool:
            i = 1 if bool(index) else 0
        else:
            i = int(index)
            if i < 0 or i >= len(self.subs):
                i = self.default
        args = [free[j - 1] for j in self.picks[i]]
        outs = self.subs[i].program.run(args)
        k = len(self.kinds)
        res = _settle(outs[:k], self.kinds, free)
        if self.record is None:
            return res
        return res + ((i, _kept(outs[k:])),)

    def describe(self):
        return [f"branch {i}:\n" + s.graph.as_text() for i, s in enumerate(self.subs)]


def switch(index, branches, default=None, check=None, name="switch", fuse=True, taped=False):
    """While this thread traces: record a node that, at every run, runs only branch
    ``branches[index]`` (``default``, an index into ``branches``, when out of range; the last
    branch if None). ``index``: a traced boolean (``branches`` = [false, true]) or integer
    scalar. Each branch is a function of no arguments returning a flat sequence of arrays (or
    numbers); all must agree in count and dtypes and, to be compiled, shapes. ``check(outputs)``
    (the branches' outputs, one list per branch) may raise a library's own error first.
    ``taped``: the caller differentiates the node itself (:func:`switch_backward`), so another
    operation listener recording (a tape, paused by its caller) does not refuse it. Returns the
    traced outputs (a list)."""
    ctx = _context(name, taped)
    where = _tr.user_location()
    idx = _as_array(index)
    if np.ndim(idx._a) != 0:
        raise _final(ValueError(f"{name}: the branch index (or predicate) must be a scalar, "
                                f"got shape {tuple(np.shape(idx._a))}" + _tr._at(where)))
    as_bool = idx._a.dtype.kind == "b"
    if not as_bool and idx._a.dtype.kind not in "iu":
        raise _final(TypeError(f"{name}: the branch index must be an integer or boolean "
                               f"scalar, got {idx._a.dtype}" + _tr._at(where)))
    idx_t = ctx.template(idx)
    traced = []
    for i, fn in enumerate(branches):
        traced.append(_trace_sub(ctx, f"{name}_branch{i}", lambda fn=fn: fn(), ()))
    if check is not None:
        _checked(check, [t[3] for t in traced])
    counts = {len(t[3]) for t in traced}
    if len(counts) != 1:
        raise _final(ValueError(f"{name}: the branches return different numbers of values "
                                f"({[len(t[3]) for t in traced]})" + _tr._at(where)))
    first = traced[0][3]
    for i, t in enumerate(traced[1:], 1):
        for k, (a, b) in enumerate(zip(first, t[3])):
            if a._a.dtype != b._a.dtype:
                raise _final(TypeError(f"{name}: output {k} is {a._a.dtype} in branch 0 and "
                                       f"{b._a.dtype} in branch {i}" + _tr._at(where)))
            if np.shape(a._a) != np.shape(b._a):
                raise _tr.UnsupportedTrace(
                    f"{name}: output {k} has shape {np.shape(a._a)} in branch 0 and "
                    f"{np.shape(b._a)} in branch {i}: the result's shape would depend on the "
                    f"values" + _tr._at(where))
    subs = [_Sub(f"{name}_branch{i}", t[0], (), t[2]) for i, t in enumerate(traced)]
    for s in subs:
        s.build(fuse)
    args, picks = _outer_args(ctx, subs, (idx_t,))
    n = len(branches)
    default = n - 1 if default is None else default
    kinds = _kinds(subs[0].graph.output_values())
    driver = _SwitchDriver(subs, picks, default, kinds, as_bool)
    return _node(ctx, name, driver, args, subs, [x._a for x in first], where)


# ----------------------------------------------------------------------------- while
class _WhileDriver:
    """The replay of a loop node: ``(maximum_iterations, *loop vars, *free values)`` -> the
    loop variables after the last iteration."""

    def __init__(self, cond, body, picks, n, kinds):
        self.cond = cond
        self.body = body
        self.picks = picks
        self.n = n
        self.kinds = kinds
        self.iterations = None      # of the last run (for tests and inspection)

    def __call__(self, maximum, *args):
        n = self.n
        lv = list(_settle(args[:n], self.kinds, ()))
        rest = args[n:]
        cfree = [rest[j - 1 - n] for j in self.picks[0]]
        bfree = [rest[j - 1 - n] for j in self.picks[1]]
        limit = None if maximum is None else int(maximum)
        stack = None if self.record is None else []
        it = 0
        while limit is None or it < limit:
            if not bool(self.cond.program.run(lv + cfree)[0]):
                break
            outs = self.body.program.run(lv + bfree)
            if stack is not None:
                stack.append(_kept(outs[n:]))
            lv = list(_settle(outs[:n], self.kinds, ()))
            it += 1
        self.iterations = it
        res = _settle(lv, self.kinds, args)
        return res if stack is None else res + (stack,)

    def describe(self):
        return ["condition:\n" + self.cond.graph.as_text(), "body:\n" + self.body.graph.as_text()]


def while_loop(cond, body, loop_vars, maximum_iterations=None, check=None, name="while_loop",
               fuse=True, taped=False):
    """While this thread traces: record a node that, at every run, repeats ``loop_vars =
    body(*loop_vars)`` while ``cond(*loop_vars)`` is true (and fewer than
    ``maximum_iterations`` iterations ran, when given: a number or a traced integer).
    ``loop_vars``: a flat sequence of tnp arrays or numbers; ``body`` returns a flat sequence
    of the same count, dtypes and shapes. ``check(loop_vars, outputs)`` (the placeholders and
    the body's traced outputs) may raise a library's own error first. ``taped``: as
    :func:`switch`'s (:func:`loop_backward`). Returns the traced loop variables after the loop
    (a list)."""
    ctx = _context(name, taped)
    where = _tr.user_location()
    init = [_as_array(x) for x in loop_vars]
    init_t = [ctx.template(x) for x in init]
    backends = [x._a for x in init]
    if maximum_iterations is not None and not isinstance(maximum_iterations, int):
        maximum_iterations = _as_array(maximum_iterations)
    max_t = ctx.template(maximum_iterations)
    cnodes, cparams, ctemps, couts = _trace_sub(ctx, f"{name}_cond", lambda *a: (cond(*a),),
                                                backends)
    c = couts[0]
    if np.ndim(c._a) != 0:
        raise _final(ValueError(f"{name}: the loop condition must be a scalar, got shape "
                                f"{tuple(np.shape(c._a))}" + _tr._at(where)))
    box = []

    def run_body(*a):
        box.extend(a)
        return body(*a)

    bnodes, bparams, btemps, bouts = _trace_sub(ctx, f"{name}_body", run_body, backends)
    if check is not None:
        _checked(check, box, bouts)
    if len(bouts) != len(init):
        raise _final(ValueError(f"{name}: the body returns {len(bouts)} values for "
                                f"{len(init)} loop variables" + _tr._at(where)))
    for k, (a, b) in enumerate(zip(init, bouts)):
        if a._a.dtype != b._a.dtype:
            raise _final(TypeError(f"{name}: loop variable {k} enters the loop with type "
                                   f"{a._a.dtype} but has type {b._a.dtype} after 1 "
                                   f"iteration" + _tr._at(where)))
        if np.shape(a._a) != np.shape(b._a):
            raise _tr.UnsupportedTrace(f"{name}: loop variable {k} enters the loop with shape "
                                       f"{np.shape(a._a)} but has shape {np.shape(b._a)} after "
                                       f"1 iteration: its shape would depend on the values"
                                       + _tr._at(where))
    csub = _Sub(f"{name}_cond", cnodes, cparams, ctemps)
    bsub = _Sub(f"{name}_body", bnodes, bparams, btemps)
    csub.build(fuse)
    bsub.build(fuse)
    args, picks = _outer_args(ctx, [csub, bsub], (max_t, *init_t))
    kinds = _kinds(bparams)
    driver = _WhileDriver(csub, bsub, picks, len(init), kinds)
    outs = _node(ctx, name, driver, args, [csub, bsub], backends, where)
    # a write into a loop variable's memory (the first iteration's is the initial value's)
    node = ctx.graph.nodes[-1]
    for params, sub in ((cparams, csub), (bparams, bsub)):
        written = {w.id for n in sub.graph.nodes for w in n.writes}
        for k, p in enumerate(params):
            t = init_t[k]
            if p.id in written and type(t) in (Ref, Cap) and \
                    all(w.id != t.value.id for w in node.writes):
                node.writes.append(t.value)
    return outs


# ----------------------------------------------------------------------------- gradients
def _kept(values):
    """Exported values as a record keeps them: memory of their own (a sub-program's next run
    may reuse its buffers)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in values)


def _forward_driver(ctx, forward, kind, name):
    v = ctx.values.get(id(forward))
    node = None if v is None else v.node
    driver = None if node is None else getattr(node, "sub", None)
    if not isinstance(driver, kind):
        raise TypeError(f"{name}: {forward!r} is not an output of a traced "
                        f"{'switch' if kind is _SwitchDriver else 'loop'} node")
    return driver


def _record_value(ctx, driver):
    """The forward node's record output (made on the first backward that needs it): what the
    forward run exported, read by the backward nodes."""
    if driver.record is None:
        node = driver.node
        v = ctx.graph.new_value(np.empty((), object), "node", node=node)
        v.opaque = True
        # made while a backward is traced, it belongs where its node is (not to that backward)
        ctx.scope_of[v.id] = ctx.scope_of.get(node.outputs[0].id)
        node.outputs.append(v)
        node.result = tuple(node.result) + (Ref(v),)
        driver.record = v
    return driver.record


def _agree(name, outs, want, where):
    """The backward sub-programs' outputs agree with ``want`` (backend values) in count, dtype
    and shape."""
    if len(outs) != len(want):
        raise _final(ValueError(f"{name}: {len(outs)} values for {len(want)}" + _tr._at(where)))
    for k, (a, b) in enumerate(zip(outs, want)):
        if a._a.dtype != b.dtype or np.shape(a._a) != np.shape(b):
            raise _tr.UnsupportedTrace(f"{name}: value {k} is {a._a.dtype}{list(np.shape(a._a))}"
                                       f", expected {b.dtype}{list(np.shape(b))}"
                                       + _tr._at(where))


def _trace_reading(ctx, scope, what, fn, params):
    ctx.readable.append(scope)
    try:
        return _trace_sub(ctx, what, fn, params)
    finally:
        ctx.readable.pop()


class _SwitchBackDriver:
    """The replay of a switch's backward: ``(record, *free values)`` -> the backward of the
    branch the forward run took, on the values it exported."""

    def __init__(self, subs, picks, positions, kinds):
        self.subs = subs
        self.picks = picks
        self.positions = positions
        self.kinds = kinds

    def __call__(self, record, *free):
        i, exported = record
        args = [exported[p] for p in self.positions[i]] + [free[j - 1] for j in self.picks[i]]
        return _settle(self.subs[i].program.run(args), self.kinds, free)

    def describe(self):
        return [f"backward of branch {i}:\n" + s.graph.as_text()
                for i, s in enumerate(self.subs)]


def switch_backward(forward, branches, name="switch_grad", fuse=True):
    """While this thread traces: the backward of the switch node that made ``forward`` (one of
    its traced outputs), as one more switch node. ``branches[i]`` (a function of no arguments
    returning a flat sequence of arrays, all branches agreeing in count, dtypes and shapes) is
    branch ``i``'s backward: it may read the values branch ``i`` made (what the forward run
    exports to the backward). At every run only the backward of the branch the forward run
    took runs. Returns the traced outputs (a list)."""
    ctx = _context(name, taped=True)
    where = _tr.user_location()
    fwd = _forward_driver(ctx, forward, _SwitchDriver, name)
    traced = [_trace_reading(ctx, fwd.scopes[i], f"{name}_branch{i}", lambda fn=fn: fn(), ())
              for i, fn in enumerate(branches)]
    first = traced[0][3]
    for t in traced[1:]:
        _agree(name, t[3], [x._a for x in first], where)
    subs = [_Sub(f"{name}_branch{i}", t[0], (), t[2], imports=fwd.scopes[i],
                 scope_of=ctx.scope_of) for i, t in enumerate(traced)]
    positions = [fwd.subs[i].export(s.imported) for i, s in enumerate(subs)]
    rec = _record_value(ctx, fwd)
    for s in subs:
        s.build(fuse)
    args, picks = _outer_args(ctx, subs, (Ref(rec),))
    driver = _SwitchBackDriver(subs, picks, positions, _kinds(subs[0].graph.output_values()))
    return _node(ctx, name, driver, args, subs, [x._a for x in first], where)


class _ReverseLoopDriver:
    """The replay of a loop's backward: ``(record, *carry, *free values)`` -> the carry after
    the body's backward ran once per forward iteration, the last first, each on the values
    that iteration exported."""

    def __init__(self, body, picks, positions, n, kinds):
        self.body = body
        self.picks = picks
        self.positions = positions
        self.n = n
        self.kinds = kinds

    def __call__(self, stack, *args):
        n = self.n
        carry = list(_settle(args[:n], self.kinds, ()))
        rest = args[n:]
        free = [rest[j - 1 - n] for j in self.picks[0]]
        pos = self.positions
        for exported in reversed(stack):
            outs = self.body.program.run([exported[p] for p in pos] + carry + free)
            carry = list(_settle(outs, self.kinds, ()))
        return _settle(carry, self.kinds, args)

    def describe(self):
        return ["backward of the body:\n" + self.body.graph.as_text()]


def loop_backward(forward, body, carry, name="while_loop_grad", fuse=True):
    """While this thread traces: the backward of the loop node that made ``forward`` (one of
    its traced outputs), as one more loop node: ``carry = body(*carry)`` once per iteration the
    forward run made, the last first. ``body`` may read the values the forward body made (that
    iteration's: the forward loop keeps them on a stack); it returns a flat sequence of the
    carry's count, dtypes and shapes. Returns the traced carry after the last (the first
    iteration's) backward."""
    ctx = _context(name, taped=True)
    where = _tr.user_location()
    fwd = _forward_driver(ctx, forward, _WhileDriver, name)
    init = [_as_array(x) for x in carry]
    init_t = [ctx.template(x) for x in init]
    backends = [x._a for x in init]
    nodes, params, temps, outs = _trace_reading(ctx, fwd.scopes[1], f"{name}_body", body,
                                                backends)
    _agree(name, outs, backends, where)
    sub = _Sub(f"{name}_body", nodes, params, temps, imports=fwd.scopes[1],
               scope_of=ctx.scope_of)
    positions = fwd.body.export(sub.imported)
    rec = _record_value(ctx, fwd)
    sub.build(fuse)
    args, picks = _outer_args(ctx, [sub], (Ref(rec), *init_t))
    driver = _ReverseLoopDriver(sub, picks, positions, len(init), _kinds(params))
    return _node(ctx, name, driver, args, [sub], backends, where)
