"""The traced program: values, nodes and the graph that holds them.

A :class:`Value` is one array (or NumPy scalar) the program makes or reads, with the shape and
dtype it had while tracing. A :class:`Node` is one reported tnp operation: what to call when the
program is replayed, its arguments as a *template* (Python structures whose leaves are
:class:`Ref` and :class:`Cap` markers for values, or plain constants), the values it produced and
the values it wrote in place. The graph lists nodes in the order the function ran them, which is
an order in which they can be replayed.
"""
from __future__ import annotations

__all__ = ["Value", "Ref", "Cap", "Node", "Graph", "walk_template"]


class Value:
    """One array or scalar of the program.

    ``origin`` is 'input' (argument ``index`` of the flattened arguments), 'capture' (an array the
    function read from outside: a global, a closure, a default argument), or 'node' (made by
    ``node``). ``scalar``: the value was a NumPy scalar (a tnp ``Scalar``), not an array.
    ``storage``: the id of the memory it lives in, shared with the values that view it.
    """

    __slots__ = ("id", "shape", "dtype", "scalar", "origin", "node", "index", "storage", "strides",
                 "c_contiguous", "opaque", "deps")

    def __init__(self, vid, backend, origin, node=None, index=None):
        self.id = vid
        self.shape = tuple(getattr(backend, "shape", ()))
        self.dtype = backend.dtype
        self.scalar = _is_numpy_scalar(backend)
        self.origin = origin
        self.node = node
        self.index = index
        self.storage = vid
        self.strides = None if self.scalar else backend.strides
        self.c_contiguous = (not self.scalar) and backend.flags.c_contiguous
        # an opaque value is a Python object a primitive made (its caches, a closure), not an
        # array: ``deps`` are the values it may hold on to, alive as long as it is read
        self.opaque = False
        self.deps = ()

    @property
    def name(self):
        return f"v{self.id}"

    def describe(self):
        shape = ",".join(str(s) for s in self.shape)
        if self.opaque:
            return "opaque"
        kind = "scalar " if self.scalar else ""
        return f"{kind}{self.dtype}[{shape}]"

    def __repr__(self):
        return f"<{self.name}: {self.describe()}>"


def _is_numpy_scalar(x):
    import numpy as np

    return isinstance(x, np.generic)


class Ref:
    """A template leaf: the value ``value`` (read from the replay's environment)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return self.value.name


class Cap:
    """A template leaf: captured object ``obj`` (a tnp or NumPy array read from outside the
    function), read at every replay, so a later change to it is seen, as eagerly."""

    __slots__ = ("value", "obj")

    def __init__(self, value, obj):
        self.value = value
        self.obj = obj

    def __repr__(self):
        return f"capture:{self.value.name}"


def walk_template(t, fn):
    """Call ``fn`` on every Ref/Cap leaf of template ``t``."""
    if type(t) is Ref or type(t) is Cap:
        fn(t)
    elif type(t) in (list, tuple):
        for e in t:
            walk_template(e, fn)
    elif type(t) is dict:
        for e in t.values():
            walk_template(e, fn)
    elif type(t) is slice:
        walk_template(t.start, fn)
        walk_template(t.stop, fn)
        walk_template(t.step, fn)
    elif isinstance(t, tuple) and hasattr(t, "_fields"):
        for e in t:
            walk_template(e, fn)


class Node:
    """One operation of the program.

    ``call``: the callable the replay runs; ``args``/``kwargs``: its argument templates;
    ``mode``: 'numpy' (``call`` takes backend arrays and is what tnp's dispatch itself calls on the
    CPU) or 'eager' (``call`` is the tnp operation, given tnp arrays: the exact but slower way,
    for operations tnp computes by hand). ``result``: the result template (Refs for the values it
    made or returned). ``writes``: values written in place. ``where``: the user's source line.
    """

    __slots__ = ("id", "name", "call", "mode", "args", "kwargs", "result", "outputs", "writes",
                 "where", "info", "operator", "sub", "reads", "observe_level")

    def __init__(self, nid, name, call, mode, args, kwargs, where):
        self.id = nid
        self.name = name
        self.call = call
        self.mode = mode
        self.args = args
        self.kwargs = kwargs
        self.result = None
        self.outputs = []
        self.writes = []
        self.where = where
        self.info = None        # filled by the fusion pass: how it fuses
        self.operator = None    # the Python operator when reported by one ('__add__'...)
        self.sub = None         # a control-flow node's driver (its sub-programs: control.py)
        self.reads = ()         # values read through an opaque argument (a primitive's caches)
        # an observation (tnp.extend.observe): replayed only while a replay observer of this
        # level or more is installed; None for every other node
        self.observe_level = None

    def inputs(self):
        """The values this node reads (in template order, without repeats)."""
        seen = {}

        def add(leaf):
            seen.setdefault(leaf.value.id, leaf.value)

        walk_template(self.args, add)
        walk_template(self.kwargs, add)
        for v in self.reads:
            seen.setdefault(v.id, v)
        return list(seen.values())

    def describe(self):
        def show(t):
            if type(t) is Ref or type(t) is Cap:
                return repr(t)
            if type(t) is list:
                return "[" + ", ".join(show(e) for e in t) + "]"
            if type(t) is tuple:
                return "(" + ", ".join(show(e) for e in t) + ("," if len(t) == 1 else "") + ")"
            if type(t) is dict:
                return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in t.items()) + "}"
            if type(t) is slice:
                return f"slice({show(t.start)}, {show(t.stop)}, {show(t.step)})"
            r = repr(t)
            return r if len(r) < 40 else r[:37] + "..."

        parts = [show(a) for a in self.args]
        parts += [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        outs = ", ".join(f"{v.name}: {v.describe()}" for v in self.outputs) or "-"
        extra = " (in place)" if self.writes else ""
        mode = "" if self.mode == "numpy" else f" [{self.mode}]"
        return f"{outs} = {self.name}({', '.join(parts)}){extra}{mode}"


class Graph:
    """The nodes of a traced function, its inputs, captures and output template."""

    def __init__(self):
        self.nodes = []
        self.values = {}
        self.inputs = []        # Values of the flattened array arguments, in order
        self.captures = []      # Values read from outside (Cap leaves carry the object)
        self.capture_objs = []
        self.output = None      # template of the function's result
        self.fn_name = "f"

    def new_value(self, backend, origin, node=None, index=None):
        v = Value(len(self.values), backend, origin, node, index)
        self.values[v.id] = v
        return v

    def output_values(self):
        found = []
        walk_template(self.output, lambda leaf: found.append(leaf.value))
        return found

    def as_text(self, groups=None):
        """The program as text: inputs, one line per node (with the user's line), outputs."""
        lines = [f"graph {self.fn_name}("
                 + ", ".join(f"{v.name}: {v.describe()}" for v in self.inputs) + ")"]
        for c in self.captures:
            lines.append(f"  capture {c.name}: {c.describe()}")
        in_group = {}
        for g in groups or ():
            for n in g.nodes:
                in_group[n.id] = g
        shown = set()
        for n in self.nodes:
            g = in_group.get(n.id)
            if g is not None:
                if g.id in shown:
                    continue
                shown.add(g.id)
                lines.append(f"  fused kernel k{g.id} ({g.kind}, {len(g.nodes)} ops, domain "
                             f"{g.domain_text()}): reads "
                             + ", ".join(v.name for v in g.inputs) + " -> "
                             + ", ".join(v.name for v in g.outputs))
                for m in g.nodes:
                    lines.append(f"    | {m.describe()}{_where(m)}")
                continue
            lines.append(f"  {n.describe()}{_where(n)}")
            if n.sub is not None:
                for text in n.sub.describe():
                    lines.extend("    | " + line for line in text.splitlines())
        outs = []
        walk_template(self.output, lambda leaf: outs.append(leaf.value.name))
        lines.append("  return " + (", ".join(outs) if outs else repr(self.output)))
        return "\n".join(lines)


def _where(n):
    if not n.where:
        return ""
    fname, line = n.where[0], n.where[1]
    return f"    # {fname.rsplit('/', 1)[-1]}:{line}"
