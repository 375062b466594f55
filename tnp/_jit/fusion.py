"""Fusion: which nodes of a graph become one kernel.

A node is *fusible* when it is an elementwise operation (a ufunc call or operator, ``where``, a
cast) or a reduction over the last axis (``sum``, ``mean``, ``max``, ``min``) whose exact result a
kernel can reproduce: the kernel does the basic IEEE operations itself and calls NumPy's own
inner loop for the rest (:mod:`.ufuncloops`), so a fused result is bit for bit eager NumPy's.
Anything unsure (a keyword argument, a dtype the kernels do not handle, an operand that is not
C-contiguous, a loop that failed validation) is simply not fused.

Fusible nodes are grouped greedily in program order. Every group has a *domain* ``P + (N,)``:
its elementwise values have that shape, its reductions make per-row values of shape ``P + (1,)``
(``keepdims``) or ``P``; a kernel runs row by row. A group stops growing once an operation
outside it reads one of its values, or writes memory it reads (it must then have run), so a
group can always run where its last member was.
"""
from __future__ import annotations

import numpy as np

from .graph import Cap, Ref
from .ufuncloops import loop_for, sig_of

__all__ = ["OpInfo", "Group", "find_groups", "classify"]

_KERNEL_DTYPES = set("?bBhHiIlLqQfd")
# operator method -> ufunc name (binary and unary); in-place operators are writes, not fused
_OPERATOR_UFUNC = {
    "__add__": "add", "__radd__": "add", "__sub__": "subtract", "__rsub__": "subtract",
    "__mul__": "multiply", "__rmul__": "multiply", "__truediv__": "divide",
    "__rtruediv__": "divide", "__floordiv__": "floor_divide", "__rfloordiv__": "floor_divide",
    "__mod__": "remainder", "__rmod__": "remainder", "__and__": "bitwise_and",
    "__rand__": "bitwise_and", "__or__": "bitwise_or", "__ror__": "bitwise_or",
    "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor", "__lshift__": "left_shift",
    "__rlshift__": "left_shift", "__rshift__": "right_shift", "__rrshift__": "right_shift",
    "__eq__": "equal", "__ne__": "not_equal", "__lt__": "less", "__le__": "less_equal",
    "__gt__": "greater", "__ge__": "greater_equal", "__negative__": "negative",
    "__positive__": "positive", "__absolute__": "absolute", "__invert__": "invert",
    "__pow__": "power", "__rpow__": "power",
}
# what a kernel computes itself, exactly as NumPy's loops do (IEEE operations, integer
# arithmetic that wraps, comparisons, logic); the rest calls NumPy's loop
_INLINE = {
    "f": {"add", "subtract", "multiply", "divide", "negative", "positive", "absolute",
          "square", "sqrt", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not"},
    "i": {"add", "subtract", "multiply", "negative", "positive", "absolute", "square",
          "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "logical_and", "logical_or",
          "logical_xor", "logical_not"},
    "b": {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
          "bitwise_or", "bitwise_xor", "invert", "positive"},
}
_REDUCTIONS = {"sum": ("add", "sum"), "mean": ("add", "mean"), "max": ("maximum", "max"),
               "min": ("minimum", "min"), "amax": ("maximum", "max"),
               "amin": ("minimum", "min"), "add.reduce": ("add", "sum"),
               "maximum.reduce": ("maximum", "max"), "minimum.reduce": ("minimum", "min")}
_REDUCTION_PARAMS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_MAX_ROW = 1 << 20      # rows longer than this are reduced by NumPy (a row buffer each)
# Numba's compilation time grows faster than a kernel's length (a 3000-operation kernel takes
# many minutes): past these sizes a group is closed and the next operation starts another
MAX_GROUP_NODES = 256
MAX_GROUP_LOOPS = 32


class OpInfo:
    """How one fusible node computes. ``operands``: ``('v', Value)`` or ``('c', constant)``."""

    __slots__ = ("kind", "op", "loop", "operands", "in_dtypes", "out", "rop", "keepdims",
                 "node")

    def __init__(self, kind, op, operands, in_dtypes, out, node, loop=None, rop=None,
                 keepdims=False):
        self.kind = kind          # 'ew' | 'reduce'
        self.op = op              # inline op name, 'where', 'cast', or 'loop'
        self.loop = loop
        self.operands = operands
        self.in_dtypes = in_dtypes
        self.out = out
        self.node = node
        self.rop = rop            # reductions: 'sum' | 'mean' | 'max' | 'min'
        self.keepdims = keepdims


def _operand(t):
    """A template leaf as a kernel operand, or None."""
    if type(t) is Ref or type(t) is Cap:
        v = t.value
        if v.dtype.char not in _KERNEL_DTYPES:
            return None
        if not v.scalar and not v.c_contiguous and not (v.shape == () or np.prod(v.shape) <= 1):
            return None
        return ("v", v)
    if type(t) in (bool, int, float):
        return ("c", t)
    if isinstance(t, np.generic) and t.dtype.char in _KERNEL_DTYPES:
        return ("c", t)
    return None


def _operand_dtype(o):
    kind, x = o
    if kind == "v":
        return x.dtype
    if isinstance(x, np.generic):
        return x.dtype
    return type(x)        # a Python number: weak (NEP 50)


def _single_output(node):
    if len(node.outputs) != 1 or type(node.result) is not Ref or node.writes:
        return None
    v = node.outputs[0]
    if node.result.value is not v or v.scalar or v.shape == () or 0 in v.shape:
        return None
    if v.dtype.char not in _KERNEL_DTYPES:
        return None
    return v


def _kind(dt):
    k = np.dtype(dt).kind
    return "i" if k in "iu" else k


def classify(node):
    """The node's :class:`OpInfo` if a kernel can compute it exactly, else None."""
    if node.mode != "numpy":
        return None
    name = node.name
    if name in _REDUCTIONS:
        return _classify_reduction(node)
    out = _single_output(node)
    if out is None:
        return None
    call = node.call
    if node.operator is not None:
        uname = _OPERATOR_UFUNC.get(node.operator)
        if uname is None or node.kwargs:
            return None
        if uname == "power":
            # NumPy's ``**`` squares for an exponent of 2 (its other exponents are not
            # the power loop's results: not fused)
            if len(node.args) == 2 and type(node.args[1]) in (int, float) and \
                    node.args[1] == 2 and node.operator == "__pow__":
                return _elementwise(node, np.square, node.args[:1], out)
            return None
        return _elementwise(node, getattr(np, uname), node.args, out)
    if isinstance(call, np.ufunc):
        if node.kwargs or call.nout != 1 or name != call.__name__ or \
                len(node.args) != call.nin or call.signature is not None:
            return None
        return _elementwise(node, call, node.args, out)
    if call is np.where and len(node.args) == 3 and not node.kwargs:
        ops = [_operand(a) for a in node.args]
        if any(o is None for o in ops):
            return None
        return OpInfo("ew", "where", ops, [np.dtype(bool), out.dtype, out.dtype], out, node)
    if name == "astype" and len(node.args) == 2 and not node.kwargs:
        src = _operand(node.args[0])
        if src is None or src[0] != "v" or src[1].scalar:
            return None
        a, b = _kind(src[1].dtype), _kind(out.dtype)
        # casts a kernel does exactly as NumPy: to bool, from bool, integer to integer or to
        # float, float to float (float to integer is implementation-defined for NaN and
        # overflow: not fused)
        if b == "f" and a == "f" or b == "b" or a == "b" or a == "i":
            return OpInfo("ew", "cast", [src], [src[1].dtype], out, node)
    return None


def _elementwise(node, u, args, out):
    if getattr(u, "signature", None) is not None:    # a gufunc (matmul): not elementwise
        return None
    ops = [_operand(a) for a in args]
    if any(o is None for o in ops) or not any(o[0] == "v" and not o[1].scalar for o in ops):
        return None
    try:
        loop = u.resolve_dtypes(tuple(_operand_dtype(o) for o in ops) + (None,) * u.nout)
    except Exception:
        return None
    ins, res = loop[:u.nin], loop[u.nin]
    if res != out.dtype or not all(d.char in _KERNEL_DTYPES for d in loop):
        return None
    for o in ops:    # NEP 50: a Python int must fit the loop's integer type (else NumPy raised)
        if o[0] == "c" and type(o[1]) is int and _kind(loop[0]) == "i":
            info = np.iinfo(loop[0])
            if not info.min <= o[1] <= info.max:
                return None
    name = u.__name__
    kinds = {_kind(d) for d in ins}
    if len(kinds) == 1 and name in _INLINE.get(kinds.pop(), ()) and \
            len({d for d in ins}) == 1:
        return OpInfo("ew", name, ops, list(ins), out, node)
    ref = loop_for(u, sig_of(list(ins) + [res]))
    if ref is None:
        return None
    return OpInfo("ew", "loop", ops, list(ins), out, node, loop=ref)


def _bind_reduction(node):
    args = list(node.args)
    if not args:
        return None
    a = args[0]
    params = dict(zip(_REDUCTION_PARAMS, args[1:]))
    for k, v in node.kwargs.items():
        if k in params or k not in _REDUCTION_PARAMS:
            return None
        params[k] = v
    return a, params


def _classify_reduction(node):
    b = _bind_reduction(node)
    if b is None:
        return None
    a, p = b
    if p.get("dtype") is not None or p.get("out") is not None or "initial" in p or \
            p.get("where", True) is not True:
        return None
    src = _operand(a)
    if src is None or src[0] != "v" or src[1].scalar:
        return None
    v = src[1]
    if len(node.outputs) != 1 or type(node.result) is not Ref or node.writes:
        return None
    out = node.outputs[0]
    nd = len(v.shape)
    axis = p.get("axis", 0 if node.name.endswith(".reduce") else None)
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    if axis is None and nd == 1:
        axis = 0
    if type(axis) is not int or axis not in (nd - 1, -1) or nd == 0:
        return None
    keepdims = p.get("keepdims", False)
    if type(keepdims) is not bool:
        return None
    if v.dtype.char not in "fd" or out.dtype != v.dtype:
        return None
    n = v.shape[-1]
    if n < 2 or n > _MAX_ROW or 0 in v.shape:
        return None
    uname, rop = _REDUCTIONS[node.name]
    ref = loop_for(getattr(np, uname), sig_of([v.dtype, v.dtype, v.dtype]), reduce=True)
    if ref is None:
        return None
    return OpInfo("reduce", "reduce", [src], [v.dtype], out, node, loop=ref, rop=rop,
                  keepdims=keepdims)


# ----------------------------------------------------------------------------- groups
class Group:
    """Fused nodes, run as one kernel. ``levels``: value id -> 'E' (elementwise, the domain's
    shape), 'RK' (a row value kept as ``P + (1,)``) or 'R' (a row value of shape ``P``)."""

    def __init__(self, gid, domain):
        self.id = gid
        self.domain = domain            # P + (N,)
        self.infos = []
        self.nodes = []
        self.levels = {}
        self.open = True
        self.reads_storage = set()
        self.has_reduction = False
        self.forward = None             # the group it was merged into
        self.inputs = []                # filled at the end: external Values
        self.outputs = []               # Values used after the kernel
        self.kind = "elementwise"

    def domain_text(self):
        return "x".join(str(d) for d in self.domain)

    @property
    def P(self):
        return self.domain[:-1]

    @property
    def N(self):
        return self.domain[-1]

    def absorb(self, other):
        """Take in the members of ``other`` (same domain, both still open)."""
        pairs = sorted(zip(self.nodes + other.nodes, self.infos + other.infos),
                       key=lambda p: p[0].id)
        self.nodes = [p[0] for p in pairs]
        self.infos = [p[1] for p in pairs]
        self.levels.update(other.levels)
        self.has_reduction = self.has_reduction or other.has_reduction
        other.forward = self
        other.open = False


def _pattern(shape, group, level):
    """How an outside operand of ``shape`` is read by a member at ``level``: 'full', 'row',
    'col', 'scalar', or None (a broadcast the kernels do not do)."""
    P, N = group.P, group.N
    if level == "E":
        target = P + (N,)
    elif level == "RK":
        target = P + (1,)
    else:
        target = P
    s = tuple(shape)
    if len(s) > len(target):
        return None
    s = (1,) * (len(target) - len(s)) + s
    if level == "R":
        if s == P:
            return "row" if P else "scalar"
        return "scalar" if all(d == 1 for d in s) else None
    rows, col = s[:-1], s[-1] if s else 1
    row_full = rows == P
    row_one = all(d == 1 for d in rows)
    if level == "RK":
        if col != 1:
            return None
        return "row" if row_full and P else ("scalar" if row_one else None)
    col_full = col == N
    col_one = col == 1
    if row_full and col_full:
        return "full"
    if row_full and col_one and not row_one:
        return "row"
    if row_one and col_full:
        return "col" if P and N > 1 else "full"
    if row_one and col_one:
        return "scalar"
    return None


_COMPAT = {("E", "E"), ("E", "RK"), ("RK", "RK"), ("R", "R")}


def _can_join(group, info, group_of):
    """Whether ``info`` joins ``group``, and the level of its result there."""
    if info.kind == "reduce":
        v = info.operands[0][1]
        if tuple(v.shape) != group.domain:
            return None
        src_group = group_of(v.id)
        if src_group is group:
            if group.levels.get(v.id) != "E":
                return None
        elif _pattern(v.shape, group, "E") != "full":
            return None
        return "RK" if info.keepdims else "R"
    shape = info.out.shape
    if shape == group.domain:
        level = "E"
    elif shape == group.P + (1,) and group.N != 1 and group.has_reduction:
        level = "RK"
    elif shape == group.P and group.N != 1 and group.has_reduction:
        level = "R"
    else:
        return None
    for kind, x in info.operands:
        if kind != "v":
            continue
        if group_of(x.id) is group:
            if (level, group.levels[x.id]) not in _COMPAT:
                return None
            if level == "E" and group.levels[x.id] == "RK" and \
                    _pattern(x.shape, group, "E") not in ("row", "scalar"):
                return None
        else:
            if x.scalar or x.shape == ():
                continue
            if _pattern(x.shape, group, level) is None:
                return None
    return level


def _full(g):
    loops = sum(1 for i in g.infos if i.loop is not None)
    return len(g.infos) >= MAX_GROUP_NODES or loops >= MAX_GROUP_LOOPS


def _live(g):
    while g is not None and g.forward is not None:
        g = g.forward
    return g


def find_groups(graph, min_nodes=2):
    """The kernels of ``graph``: a list of :class:`Group` (members in program order)."""
    groups = []
    value_group = {}            # value id -> the group that computes it (follow _live)
    storage_readers = {}        # storage id -> groups reading it

    def group_of(vid):
        return _live(value_group.get(vid))

    def close_readers_of(storage):
        for g in storage_readers.pop(storage, ()):
            g = _live(g)
            g.open = False

    for node in graph.nodes:
        info = classify(node)
        for v in node.writes:     # a write: whoever read that memory must have run
            close_readers_of(v.storage)
        if info is None:
            for v in node.inputs():
                g = group_of(v.id)
                if g is not None:
                    g.open = False
            continue
        operand_values = [x for k, x in info.operands if k == "v"]
        candidates = []
        for x in operand_values:
            g = group_of(x.id)
            if g is not None and g.open and g not in candidates:
                candidates.append(g)
        for g in candidates:
            if g.open and _full(g):
                g.open = False
        candidates = [g for g in candidates if g.open]
        joinable = [(g, _can_join(g, info, group_of))
                    for g in candidates]
        joinable = [(g, lv) for g, lv in joinable if lv is not None]
        if not joinable:
            # an operation on outside values only joins the latest open group of its domain
            # (one pass over the data instead of two); that group has no reader yet, so it can
            # run where this operation is
            for g in reversed(groups):
                if g.forward is None and g.open and not _full(g):
                    lv = _can_join(g, info, group_of)
                    if lv is not None:
                        joinable = [(g, lv)]
                    break
        if joinable:
            target, level = joinable[-1]
            for g, _ in joinable[:-1]:
                if g.domain == target.domain and \
                        len(g.infos) + len(target.infos) < MAX_GROUP_NODES:
                    target.absorb(g)
        else:
            target = Group(len(groups), tuple(info.operands[0][1].shape)
                           if info.kind == "reduce" else tuple(info.out.shape))
            level = _can_join(target, info, group_of)
            if level is None:
                for g in candidates:
                    g.open = False
                continue
            groups.append(target)
        for g in candidates:    # open groups it reads from without joining: now read outside
            if _live(g) is not target:
                g.open = False
        if info.kind == "reduce":
            target.has_reduction = True
        target.infos.append(info)
        target.nodes.append(node)
        target.levels[info.out.id] = level
        value_group[info.out.id] = target
        for x in operand_values:
            if group_of(x.id) is not target:
                storage_readers.setdefault(x.storage, []).append(target)
    result = []
    outputs = {v.id for v in graph.output_values()}
    readers = {}
    for node in graph.nodes:
        for v in node.inputs():
            readers.setdefault(v.id, []).append(node)
    for g in groups:
        if g.forward is not None:
            continue
        if len(g.nodes) < min_nodes:
            continue
        members = {n.id for n in g.nodes}
        for n, info in zip(g.nodes, g.infos):
            n.info = info
        ins, seen = [], set()
        for info in g.infos:
            for k, x in info.operands:
                if k == "v" and group_of(x.id) is not g and x.id not in seen:
                    seen.add(x.id)
                    ins.append(x)
        g.inputs = ins
        g.outputs = [info.out for info in g.infos
                     if info.out.id in outputs or
                     any(r.id not in members for r in readers.get(info.out.id, ()))]
        g.kind = "rows" if g.has_reduction else "elementwise"
        g.id = len(result)
        result.append(g)
    return result
