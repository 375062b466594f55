"""The backward pass: a tape's nodes walked in reverse through the VJP rules of
:mod:`.registry`, and the ready-reporter that hands each source's gradient over the moment it
is final.

:func:`run` takes the tape (its ``_nodes``, and its ``_writes`` for the checks of saved
values) and returns the cotangent of every array it reached, by ``id``. The VJP computations
are tnp operations: the tape itself does not record them (it is paused for the pass), an
enclosing tape does, which is how higher-order gradients work.

The ready-reporter (``GradientTape.gradient(gradient_ready=, gradient_destination=)``) is for a
distributed aggregator that starts reducing each gradient while the pass goes on; it is told
after each node which sources became final, and it may offer the one node that makes all of a
source's gradient an array to write it into (:func:`gradient_destination`, read by a
hand-written backward while it runs).
"""
from __future__ import annotations

import threading

import numpy as _np

import tnp
from tnp import extend as _ext
from tnp import ndarray
from tnp.extend import device_of as _dev_of, version as version_of, wrap
from tnp.extend import is_inexact as _inexact

from . import registry as _registry
from .inplace import INPLACE_PREFIX as _INPLACE_PREFIX, write_label as _write_label
from .nodes import is_arraylike as _is_arraylike

__all__ = ["run", "ReadyReporter", "source_grad", "gradient_destination", "device_of", "fit",
           "accumulate", "tracing"]

# ``destinations``: while the backward of a node that alone makes some sources' gradients runs,
# id(source) -> the array offered for its gradient (this thread's pass only)
_local = threading.local()
_CPU = tnp.device("cpu")

# tnp_train.utils.tracing, bound at the first backward pass: importing tnp_train.utils here
# would import the layers, which import this package
_tracing = None


def _load_tracing():
    global _tracing
    from ..utils import tracing
    _tracing = tracing
    return tracing


def tracing():
    """:mod:`tnp_train.utils.tracing` (the profiler's spans)."""
    return _tracing or _load_tracing()


def run(rec, targets, output_gradients, ready=None):
    """Cotangents of every recorded array of tape ``rec`` reachable backwards from
    ``targets``; ``ready`` (a :class:`ReadyReporter`) is told after each node which sources
    became final."""
    grads = {}
    for t, og in zip(targets, output_gradients):
        if not _is_arraylike(t):
            continue
        if og is None:
            if not _inexact(t.dtype):
                continue
            dev = device_of(t)
            og = wrap(_ext.array_module(dev).ones(t.shape, dtype=t.dtype), dev)
        accumulate(grads, t, og)
    was, was_passive = rec._recording, rec._passive
    rec._recording = rec._passive = False  # the backward pass: enclosing tapes only
    writes = rec._writes
    tracing = _tracing or _load_tracing()
    # profiling: a span per hand-written backward at level 2, per VJP rule at level 3; in a
    # function being compiled (its spans are markers of the program) only the backwards of
    # backend operations (primitives), whose time a replay can tell apart: 1
    traced = 3 if tracing.level(3) else 2 if tracing.level(2) else 0
    if traced and _ext.tracing():
        traced = 1
    apply = _apply if not traced else \
        lambda node, gs, grads, writes: _apply_traced(node, gs, grads, writes, traced, tracing)
    direct = ready.direct if ready is not None else None
    try:
        if ready is not None:
            ready.start(grads)
        nodes = rec._nodes
        for i in range(len(nodes) - 1, -1, -1):
            node = nodes[i]
            offered = direct is not None and i in direct
            if offered:
                # this node alone makes some sources' gradients: offer their destinations
                _local.destinations = ready.destinations(i)
            outs = node.outputs
            if node.inplace:
                # the new version of an object written in place: its cotangent is taken, so
                # the earlier nodes (which read the old version) start from the old one's
                gs = [grads.pop(id(o), None) for o in outs]
                if not all(g is None for g in gs):
                    apply(node, gs, grads, writes)
            elif len(outs) == 1:
                g = grads.get(id(outs[0]))
                if g is not None:
                    apply(node, [g], grads, writes)
            else:
                gs = [grads.get(id(o)) for o in outs]
                if not all(g is None for g in gs):
                    apply(node, gs, grads, writes)
            if offered:
                _local.destinations = None
            if ready is not None and i in ready.pending:
                ready.report(i, grads)
    finally:
        if direct is not None:
            _local.destinations = None
        rec._recording, rec._passive = was, was_passive
    return grads


def _apply_traced(node, gs, grads, writes, traced, tracing):
    if node.rule is None:
        if traced < 3:
            return _apply(node, gs, grads, writes)
        name = f"{node.name} (VJP)"
    elif traced == 1 and getattr(node.rule, "grad_fn", None) is None:
        return _apply(node, gs, grads, writes)      # a tnp operation's rule, being compiled
    else:
        name = f"{_rule_label(node)} (backward)"
    with tracing.span(name, "backward"):
        _apply(node, gs, grads, writes)


def _apply(node, gs, grads, writes):
    """Run ``node``'s rule on its outputs' cotangents ``gs`` and add the results to ``grads``,
    after checking that the values the rule reads are still the ones recorded (``writes``:
    the tape's :class:`.inplace.Writes`, which knows the writes it recorded)."""
    for arr, v in node.versions:
        if version_of(arr) != v and not (
                writes is not None and writes.untouched(arr, v, version_of(arr))):
            raise RuntimeError(
                f"GradientTape: an array that the gradient of {_op_label(node)} needs "
                f"(shape {tuple(arr.shape)}, dtype {arr.dtype}) was modified in place after "
                f"it was recorded (its version went from {v} to {version_of(arr)}); its "
                f"gradient would be wrong. Copy it before modifying it (y = y.copy()), or "
                f"compute a new array instead of writing into it.")
    for arr, v in node.loose:
        cur = version_of(arr)
        if cur != v and not (writes is not None and writes.recorded_writes(arr, v, cur)):
            raise RuntimeError(
                f"GradientTape: an array that {_op_label(node)} produced (shape "
                f"{tuple(arr.shape)}, dtype {arr.dtype}) was modified in place by a write "
                f"the tape did not record (under stop_recording(), in another thread, or "
                f"into its backend array); gradients through it would be wrong.")
    rule = node.rule
    if rule is None:
        rule = _registry.get_rule(node.name)
        if rule is None:
            raise LookupError(f"No gradient defined for tnp.{node.name} (it was recorded "
                              f"because an input is watched); see tnp_train.autodiff.registry")
    g = _cotangent_for(node, gs)
    per_position = {}
    for pos, j, x in node.inputs:
        key = pos
        if key not in per_position:
            r = rule.for_position(pos) if isinstance(pos, int) else rule.for_keyword(pos)
            per_position[key] = None if r is None else r(node.result, *node.args, **node.kwargs)(g)
        gx = per_position[key]
        if gx is None:
            continue
        if j is not None:  # an array inside (nested) lists: the rule answers in kind
            for idx in j:
                gx = gx[idx]
                if gx is None:
                    break
            if gx is None:
                continue
        accumulate(grads, x, gx)


def source_grad(s, grads, unconnected):
    """What ``gradient`` returns for source ``s``, from the cotangents :func:`run` gave."""
    if not _inexact(s.dtype):
        return None  # integer and boolean sources get None, as in TensorFlow
    g = grads.get(id(s))
    if g is None:
        if unconnected == "zero":
            return tnp.zeros(s.shape, dtype=s.dtype, device=device_of(s))
        return None
    return fit(g, s)


# ---------------------------------------------------------------------------- the ready-reporter
class ReadyReporter:
    """Reports each source's gradient to ``fn`` the moment it is final: a source's gradient is
    complete once the backward pass has passed the first recorded node (in program order) that
    reads it, since only nodes recorded after an array was made or watched can contribute.

    With ``dest_fn``, a source read by exactly one recorded node (once) and written by none
    gets its whole gradient from that node: ``direct`` lists those nodes, and
    :meth:`destinations` asks ``dest_fn`` where each such gradient may be written."""

    __slots__ = ("fn", "unconnected", "pending", "done", "direct", "dest_fn")

    def __init__(self, nodes, sources, fn, unconnected, dest_fn=None):
        self.fn = fn
        self.unconnected = unconnected
        self.dest_fn = dest_fn
        self.done = {}                 # id(source) -> the gradient reported
        first_use = {}
        uses = {}
        wanted = {}
        for s in sources:
            wanted.setdefault(id(s), s)
        count = dest_fn is not None    # reads are counted only to offer destinations
        for i, node in enumerate(nodes):
            for _, _, x in node.inputs:
                k = id(x)
                if k in wanted:
                    if k not in first_use:
                        first_use[k] = i
                    if count:
                        uses[k] = uses.get(k, 0) + 1
            if count and node.inplace:
                for o in node.outputs:     # written in place: never direct
                    if id(o) in wanted:
                        uses[id(o)] = 2
        self.pending = {}              # node index -> the sources final after it
        self.direct = None             # node index -> the sources it alone makes
        for k, s in wanted.items():
            self.pending.setdefault(first_use.get(k, -1), []).append(s)
            if count and uses.get(k) == 1:
                if self.direct is None:
                    self.direct = {}
                self.direct.setdefault(first_use[k], []).append(s)

    def destinations(self, i):
        out = {}
        for s in self.direct[i]:
            d = self.dest_fn(s)
            if d is not None:
                out[id(s)] = d
        return out

    def start(self, grads):
        # sources no recorded node reads: their gradient (a target's seed, or None) is final
        self.report(-1, grads)

    def report(self, i, grads):
        for s in self.pending.pop(i, ()):
            g = source_grad(s, grads, self.unconnected)
            self.done[id(s)] = g
            self.fn(s, g)

    def final(self, s, grads):
        k = id(s)
        if k in self.done:
            return self.done[k]
        return source_grad(s, grads, self.unconnected)


def gradient_destination(x, like=None):
    """Inside a hand-written backward: the backend array that the final gradient of input
    ``x`` (the very object the operation was recorded with) may be written into, or None.
    Set only while the tape runs the backward of the one operation that makes all of ``x``'s
    gradient (see ``GradientTape.gradient(gradient_destination=)``); a backward that uses it
    writes exactly the values it would have returned, and returns that array.

    With ``like`` (a backend array shaped and typed as the gradient the backward computes),
    only a destination of that shape and dtype, of the same array type and on the same device,
    is given: a backward computing in another dtype (float32 for a float16 input) gets None
    and returns its own array, as without a destination."""
    dests = getattr(_local, "destinations", None)
    if not dests:
        return None
    d = dests.get(id(x))
    if d is None or like is None:
        return d
    if d.shape == like.shape and d.dtype == like.dtype and type(d) is type(like) and (
            type(d) is _np.ndarray or d.device == like.device):
        return d
    return None


# ---------------------------------------------------------------------------- cotangents
def device_of(x):
    return _dev_of(x) if isinstance(x, ndarray) else _CPU


def fit(g, x):
    """A cotangent shaped and typed like ``x``."""
    if not isinstance(g, ndarray):
        g = tnp.asarray(g)
    gd, xd = g.dtype, x.dtype
    if gd is xd and g.shape == x.shape:  # the common case, decided without NumPy's helpers
        return g
    if gd.kind == "c" and xd.kind != "c":
        g = tnp.real(g)  # a real input gets the real part of a complex cotangent
    if g.shape != tuple(x.shape):
        g = _registry.unbroadcast(g, tuple(x.shape))
    if g.dtype != xd and _inexact(xd):
        g = g.astype(xd)
    return g


def accumulate(grads, x, g):
    g = fit(g, x)
    k = id(x)
    prev = grads.get(k)
    grads[k] = g if prev is None else prev + g


def _cotangent_for(node, gs):
    """The cotangent structure a rule sees: one array, or a tuple/list aligned with the
    operation's outputs (zeros for outputs nothing depended on)."""
    res = node.result
    if isinstance(res, ndarray):
        return gs[0]
    by_id = {id(o): g for o, g in zip(node.outputs, gs)}
    return _cotangent_tree(res, by_id)


def _cotangent_tree(r, by_id):
    if isinstance(r, ndarray):
        if id(r) not in by_id:
            return None  # an output that is also an input: no cotangent of its own
        g = by_id[id(r)]
        return g if g is not None else tnp.zeros_like(r)
    if isinstance(r, (tuple, list)):
        items = [_cotangent_tree(e, by_id) for e in r]
        return type(r)(items) if type(r) in (tuple, list) else tuple(items)
    return None


# ---------------------------------------------------------------------------- labels
def _rule_label(node):
    """What a hand-written backward is called in a trace: ``dense._make_backward`` for the
    ``backward`` closure that ``tnp_train.ops.dense._make_backward`` returns."""
    fn = getattr(node.rule, "grad_fn", None)
    if fn is None:
        return getattr(node.rule, "opname", node.name)
    try:
        module = str(getattr(fn, "__module__", "") or "").rsplit(".", 1)[-1]
        name = str(getattr(fn, "__qualname__", "") or getattr(fn, "__name__", "backward"))
    except TypeError:
        # being compiled, a primitive's backward is an opaque value of the program (made at
        # each run, nothing to read while tracing): the primitive's own name
        return str(getattr(node.rule, "name", None) or node.name)
    name = name.split(".<locals>", 1)[0]
    return f"{module}.{name}" if module else name


def _op_label(node):
    n = node.name
    if node.inplace and (n == "setitem" or n.startswith(_INPLACE_PREFIX)):
        return _write_label(n)
    return f"tnp.{n}" if n not in ("custom_gradient",) and " " not in n else n
