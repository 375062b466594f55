"""One fused group as a Numba kernel: its schedule and its generated source.

A kernel runs its domain ``P + (N,)`` as ``R`` rows of ``N`` (each external operand is read as
a full ``(R, N)`` array, a row vector ``(R,)``, a column vector ``(N,)`` or a scalar). Within a
row it runs *steps*, in an order found by a small list scheduler:

* a column loop: the inline elementwise operations that can run together, over a tile;
* a call of a NumPy inner loop (``exp``, ``tanh``, ``maximum``...) over the tile, on buffers;
* a reduction of the row, by NumPy's own reduce loop (its pairwise summation order);
* per-row operations on the values reductions made.

Elementwise-only groups walk each row in tiles of ``TILE`` elements, so the buffers a NumPy
loop reads and writes stay in the L1 cache; groups with reductions take whole rows (a
reduction needs all of them). Values that one step makes and a later step reads go through
scratch buffers (reused across calls: the memory plan owns them) or straight into outputs.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

__all__ = ["KernelSpec", "build_kernel", "TILE"]

TILE = 1024
GENERATOR_VERSION = "5"


def _stamp():
    """What a kernel's compiled code depends on besides its source: the generator's version
    and the helpers it inlines (a change to either names every kernel file anew, so Numba's
    on-disk cache never serves code built from the old ones)."""
    import os

    with open(os.path.join(os.path.dirname(__file__), "nbhelpers.py"), "rb") as f:
        helpers = f.read()
    return GENERATOR_VERSION + hashlib.sha256(helpers).hexdigest()


_GENERATOR_STAMP = _stamp()


class _KV:
    """A value inside a kernel."""

    __slots__ = ("id", "dtype", "level", "op", "ext", "pattern", "const", "is_output",
                 "out_index", "home", "slot", "uses")

    def __init__(self, kid, dtype, level):
        self.id = kid
        self.dtype = np.dtype(dtype)
        self.level = level          # 'E' per element, 'W' per row
        self.op = None              # the _KOp that makes it (None: outside or a constant)
        self.ext = None             # argument index for an outside operand
        self.pattern = None         # 'full' | 'row' | 'col' | 'scalar' for outside operands
        self.const = None           # a constant's code
        self.is_output = False
        self.out_index = None
        self.home = None            # 'inline' | 'slot' | 'out' | 'ext' | 'local'
        self.slot = None
        self.uses = []


class _KOp:
    __slots__ = ("kind", "op", "operands", "out", "loop", "loop_index", "rop", "in_dtypes",
                 "step", "inline_sum")

    def __init__(self, kind, op, operands, out, in_dtypes, loop=None, rop=None):
        self.kind = kind            # 'inline' | 'loop' | 'reduce'
        self.op = op
        self.operands = operands    # [_KV]
        self.out = out
        self.loop = loop
        self.loop_index = None
        self.rop = rop
        self.in_dtypes = [np.dtype(d) for d in in_dtypes]
        self.step = None
        self.inline_sum = False     # a reduction summed inline (not by NumPy's loop)


class KernelSpec:
    """What the executor needs to call a kernel: its argument forms and scratch sizes."""

    def __init__(self, group):
        self.group = group
        self.flat = False
        self.R = 0
        self.N = 0
        self.T = 0
        self.args = []          # [(Value, form)] form: 'full' | 'vec' | 'scalar'
        self.outputs = []       # [(Value, level)]
        self.scratch = {}       # dtype char -> number of slots
        self.loops = []         # [LoopRef]
        self.source = ""
        self.key = ""
        self.steps_text = []
        self.function = None    # the compiled kernel, set by codegen


# ----------------------------------------------------------------------------- building
def build_kernel(group):
    """The :class:`KernelSpec` of ``group`` (its source included), or None if the group turns
    out not to be expressible (the caller then leaves its nodes to NumPy)."""
    spec = KernelSpec(group)
    P, N = group.P, group.N
    R = int(np.prod(P)) if P else 1
    spec.R, spec.N = R, N
    kvals = {}
    ext_index = {}
    counter = [0]
    kops = []

    def new_kv(dtype, level):
        counter[0] += 1
        kv = _KV(counter[0], dtype, level)
        return kv

    def ext_kv(value, level):
        key = (value.id, level)
        kv = kvals.get(key)
        if kv is not None:
            return kv
        if value.scalar or value.shape == () or int(np.prod(value.shape)) == 1:
            pattern = "scalar"
        else:
            from .fusion import _pattern

            pattern = _pattern(value.shape, group, "E" if level == "E" else "RK")
            if pattern is None:
                pattern = _pattern(value.shape, group, "R")
            if pattern is None:
                raise _NotExpressible(f"operand {value} of kernel")
        kv = new_kv(value.dtype, "E" if pattern in ("full", "col") else "W")
        kv.pattern = pattern
        if value.id not in ext_index:
            ext_index[value.id] = len(spec.args)
            spec.args.append([value, pattern])
        else:
            prev = spec.args[ext_index[value.id]]
            if prev[1] != pattern:
                if {prev[1], pattern} <= {"row", "col"} and R == N:
                    pass    # one vector read two ways
                elif "full" in (prev[1], pattern):
                    raise _NotExpressible("operand read as full and as a vector")
        kv.ext = ext_index[value.id]
        kvals[key] = kv
        return kv

    def const_kv(c):
        kv = new_kv(np.asarray(c).dtype if isinstance(c, np.generic) else _pytype(c), "W")
        kv.const = c
        return kv

    internal = {}           # Value id -> _KV
    level_of = group.levels
    try:
        for info in group.infos:
            lv = level_of[info.out.id]
            klevel = "E" if lv == "E" else "W"
            operands = []
            for (kind, x), want in zip(info.operands, info.in_dtypes):
                if kind == "c":
                    operands.append(const_kv(x))
                elif x.id in internal:
                    operands.append(internal[x.id])
                else:
                    operands.append(ext_kv(x, klevel if info.kind != "reduce" else "E"))
            out = new_kv(info.out.dtype, klevel)
            if info.kind == "reduce":
                src = operands[0]
                if src.level != "E":
                    raise _NotExpressible("reduction of a row value")
                op = _KOp("reduce", info.rop, [src], out, [src.dtype], loop=info.loop,
                          rop=info.rop)
            elif info.op == "loop":
                ins = []
                for kv, want in zip(operands, info.in_dtypes):
                    if kv.const is None and kv.dtype != want:
                        # NumPy casts an operand to the loop's type before the loop sees it
                        cv = new_kv(want, kv.level)
                        kops.append(_KOp("inline", "cast", [kv], cv, [kv.dtype]))
                        cv.op = kops[-1]
                        kv = cv
                    ins.append(kv)
                op = _KOp("loop", info.loop.ufunc.__name__, ins, out, info.in_dtypes,
                          loop=info.loop)
            else:
                op = _KOp("inline", info.op, operands, out, info.in_dtypes)
            out.op = op
            kops.append(op)
            internal[info.out.id] = out
        for i, v in enumerate(group.outputs):
            kv = internal[v.id]
            kv.is_output = True
            kv.out_index = i
            spec.outputs.append((v, level_of[v.id]))
    except _NotExpressible:
        return None

    spec.flat = not group.has_reduction and all(p in ("full", "scalar") for _, p in spec.args)
    if spec.flat:
        spec.R, spec.N = 1, int(np.prod(group.domain))
    spec.T = spec.N if group.has_reduction else min(TILE, spec.N)
    for i, op in enumerate([o for o in kops if o.loop is not None]):
        op.loop_index = i
        spec.loops.append(op.loop)
    steps = _schedule(kops)
    _place(kops, steps, spec)
    spec.source = _generate(spec, kops, steps)
    spec.key = hashlib.sha256((_GENERATOR_STAMP + spec.source).encode()).hexdigest()[:20]
    return spec


class _NotExpressible(Exception):
    pass


def _pytype(c):
    # a Python number is weak: its dtype is the loop's, applied where it is used
    if type(c) is bool:
        return np.bool_
    if type(c) is int:
        return np.int64
    return np.float64


# ----------------------------------------------------------------------------- scheduling
def _schedule(kops):
    """Steps: ``('col', [ops])``, ``('loop', op)``, ``('reduce', op)``, ``('row', op)``."""
    remaining = list(kops)
    done = set()
    steps = []

    def ready(op, extra=()):
        for kv in op.operands:
            if kv.op is not None and id(kv.op) not in done and id(kv.op) not in extra:
                return False
        return True

    while remaining:
        progress = False
        changed = True
        while changed:
            changed = False
            for op in list(remaining):
                if op.out.level == "W" and op.kind != "reduce" and ready(op):
                    steps.append(("row", op))
                    done.add(id(op))
                    remaining.remove(op)
                    changed = progress = True
        for op in list(remaining):
            if op.kind == "reduce" and ready(op):
                steps.append(("reduce", op))
                done.add(id(op))
                remaining.remove(op)
                progress = True
        loop_ops, in_loop = [], set()
        changed = True
        while changed:
            changed = False
            for op in list(remaining):
                if op.out.level == "E" and op.kind == "inline" and ready(op, in_loop):
                    loop_ops.append(op)
                    in_loop.add(id(op))
                    remaining.remove(op)
                    changed = True
        if loop_ops:
            steps.append(("col", loop_ops))
            done |= in_loop
            progress = True
        for op in list(remaining):
            if op.out.level == "E" and op.kind == "loop" and ready(op):
                steps.append(("loop", op))
                done.add(id(op))
                remaining.remove(op)
                progress = True
        if not progress:
            raise RuntimeError("tnp.jit: internal error: a kernel's operations cannot be "
                               "ordered")
    for i, (kind, x) in enumerate(steps):
        for op in (x if kind == "col" else [x]):
            op.step = i
    return steps


def _place(kops, steps, spec):
    """Where each value lives: inline (one column loop), a scratch slot, an output, a per-row
    local. Slots are reused once their value is dead."""
    last_use = {}
    for op in kops:
        for kv in op.operands:
            last_use[id(kv)] = max(last_use.get(id(kv), -1), op.step)
            kv.uses.append(op)
    for op in kops:
        kv = op.out
        if kv.level == "W":
            kv.home = "local"
            continue
        used_elsewhere = any(u.step != op.step for u in kv.uses)
        if kv.is_output:
            kv.home = "out"
        elif op.kind == "loop" or used_elsewhere:
            kv.home = "slot"
        else:
            kv.home = "inline"
    # slot allocation per dtype, in step order (interval reuse)
    free = {}
    busy = []       # (last step, char, slot)
    count = {}
    for si in range(len(steps)):
        for item in list(busy):
            if item[0] < si:
                busy.remove(item)
                free.setdefault(item[1], []).append(item[2])
        for op in kops:
            if op.step != si or op.out.home != "slot":
                continue
            c = op.out.dtype.char
            pool = free.setdefault(c, [])
            if pool:
                s = pool.pop()
            else:
                s = count.get(c, 0)
                count[c] = s + 1
            op.out.slot = s
            busy.append((max(last_use.get(id(op.out), si), si), c, s))
    # transient one-element slots (stride-0 operands of loop calls, reduction accumulators):
    # after the long-lived ones, a few per dtype, reset at every step
    spec.transient = {}
    for kind, x in steps:
        ops = x if kind == "col" else [x]
        need = {}
        for op in ops:
            if op.kind in ("loop", "reduce"):
                wants = list(op.in_dtypes) + [op.out.dtype]
                for kv, want in zip(op.operands + [op.out], wants):
                    if kv.level == "W" or kv.const is not None or kv.pattern in ("row", "scalar"):
                        need[want.char] = need.get(want.char, 0) + 1
                if op.kind == "reduce":
                    need[op.out.dtype.char] = need.get(op.out.dtype.char, 0) + 1
        for c, k in need.items():
            spec.transient[c] = max(spec.transient.get(c, 0), k)
    for c in set(count) | set(spec.transient):
        spec.scratch[c] = count.get(c, 0) + spec.transient.get(c, 0)
    spec.slot_base = dict(count)


# ----------------------------------------------------------------------------- source
_NP_NAMES = {"?": "np.bool_", "b": "np.int8", "B": "np.uint8", "h": "np.int16",
             "H": "np.uint16", "i": "np.int32", "I": "np.uint32", "l": "np.int64",
             "L": "np.uint64", "q": "np.int64", "Q": "np.uint64", "f": "np.float32",
             "d": "np.float64"}


def _cast(expr, src, dst):
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return expr
    if dst.kind == "b":
        return f"({expr} != 0)"
    return f"{_NP_NAMES[dst.char]}({expr})"


def _const(c, dst):
    dst = np.dtype(dst)
    if isinstance(c, np.generic):
        c = c.item()
    if dst.kind == "b":
        return "True" if bool(c) else "False"
    if dst.kind == "f":
        f = float(c)
        if math.isnan(f):
            lit = "np.nan"
        elif math.isinf(f):
            lit = "np.inf" if f > 0 else "-np.inf"
        else:
            lit = repr(f)
        return f"{_NP_NAMES[dst.char]}({lit})"
    return f"{_NP_NAMES[dst.char]}({int(c)})"


_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "equal": "==",
           "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
           "greater_equal": ">=", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
           "logical_and": "&", "logical_or": "|", "logical_xor": "!="}


def _inline_expr(op, args):
    """The expression of inline op ``op`` on operand expressions ``args`` (already of the
    loop's input types), as a value of the output type."""
    name = op.op
    out = op.out.dtype
    if name == "cast":
        return _cast(args[0], op.operands[0].dtype, out)
    if name == "where":
        return f"({args[1]} if {args[0]} else {args[2]})"
    if name.startswith("logical_"):
        # NumPy's logical loops of a number type test each operand against zero
        args = [a if d.kind == "b" else f"({a} != 0)" for a, d in zip(args, op.in_dtypes)]
    if name in _BINARY:
        e = f"({args[0]} {_BINARY[name]} {args[1]})"
    elif name == "negative":
        e = f"(-{args[0]})"
    elif name == "positive":
        e = f"({args[0]})"
    elif name == "absolute":
        e = f"abs({args[0]})"
    elif name == "square":
        e = f"({args[0]} * {args[0]})"
    elif name == "sqrt":
        e = f"np.sqrt({args[0]})"
    elif name == "invert":
        e = f"(not {args[0]})" if op.in_dtypes[0].kind == "b" else f"(~{args[0]})"
    elif name == "logical_not":
        e = f"(not {args[0]})"
    else:
        raise RuntimeError(f"tnp.jit: no inline form for {name}")
    if out.kind == "b" or (out.kind == "f" and name != "absolute"):
        # float arithmetic on operands of the loop's float type stays of that type in Numba
        return e
    return f"{_NP_NAMES[out.char]}({e})"


class _Gen:
    def __init__(self, spec):
        self.spec = spec
        self.lines = []
        self.ind = 0

    def emit(self, line):
        self.lines.append("    " * self.ind + line)


def _generate(spec, kops, steps):
    g = _Gen(spec)
    flat = spec.flat
    args = ["R", "N", "T"]
    args += [f"x{i}" for i in range(len(spec.args))]
    args += [f"o{i}" for i in range(len(spec.outputs))]
    chars = sorted(spec.scratch)
    args += [f"sc_{_cname(c)}" for c in chars]
    args += ["lp"]
    g.emit(f"def kernel({', '.join(args)}):")
    g.ind = 1
    for c in chars:
        g.emit(f"b_{_cname(c)} = np.intp(sc_{_cname(c)}.ctypes.data)")
        g.emit(f"rs_{_cname(c)} = sc_{_cname(c)}.strides[0]")
    g.emit("for r in range(R):")
    g.ind = 2
    ext_kvs = {}
    for op in kops:
        for kv in op.operands:
            if kv.ext is not None:
                ext_kvs.setdefault(id(kv), kv)
    for kv in ext_kvs.values():
        if kv.pattern == "row":
            g.emit(f"h{kv.id} = x{kv.ext}[r]")
    g.emit("for c0 in range(0, N, T):")
    g.ind = 3
    # unsigned offsets: ``x[c0 + j]`` with signed ints keeps a wraparound test in the loop,
    # which stops it from vectorizing
    g.emit("m = np.uint64(min(T, N - c0))")
    g.emit("c0u = np.uint64(c0)")
    single = len(steps) == 1 and steps[0][0] == "col"
    for si, (kind, x) in enumerate(steps):
        transient = {c: spec.slot_base.get(c, 0) for c in spec.scratch}
        if kind == "col":
            _gen_col(g, x, flat, loads_first=single)
        elif kind == "loop":
            _gen_loopcall(g, x, flat, transient, spec)
        elif kind == "reduce":
            _gen_reduce(g, x, flat, transient, spec)
        else:
            if x.kind == "loop":
                _gen_loopcall(g, x, flat, transient, spec)
            else:
                args = [_read_w(kv, t) for kv, t in zip(x.operands, x.in_dtypes)]
                g.emit(f"w{x.out.id} = {_inline_expr(x, args)}")
            if x.out.is_output:
                g.emit(f"o{x.out.out_index}[r] = w{x.out.id}")
    spec.steps_text = [_step_text(k, x) for k, x in steps]
    body = "\n".join(g.lines)
    return body + "\n"


def _cname(c):
    return {"?": "b1"}.get(c, c)


def _step_text(kind, x):
    if kind == "col":
        return "column loop: " + ", ".join(op.op for op in x)
    if kind == "loop":
        return f"NumPy loop {x.loop.ufunc.__name__} {x.loop.sig}"
    if kind == "reduce":
        if x.inline_sum:
            return f"row {x.rop} (inline, in NumPy's pairwise order)"
        return f"row {x.rop} (NumPy's {x.loop.ufunc.__name__}.reduce loop)"
    return f"row op {x.op}"


def _read_w(kv, want):
    """A per-row (or constant) operand as an expression of type ``want``."""
    if kv.const is not None:
        return _const(kv.const, want)
    if kv.ext is not None:
        e = f"h{kv.id}" if kv.pattern == "row" else f"x{kv.ext}"
        return _cast(e, kv.dtype, want)
    return _cast(f"w{kv.id}", kv.dtype, want)


def _elem(kv, flat):
    """Element ``j`` of this tile of a materialized E value."""
    if kv.ext is not None:
        if kv.pattern == "col" or flat:
            return f"x{kv.ext}[c0u + j]"
        return f"x{kv.ext}[r, c0u + j]"
    if kv.home == "out":
        o = f"o{kv.out_index}"
        return f"{o}[c0u + j]" if flat else f"{o}[r, c0u + j]"
    return f"sc_{_cname(kv.dtype.char)}[{kv.slot}, j]"


def _gen_col(g, ops, flat, loads_first=False):
    members = {id(op) for op in ops}
    g.emit("for j in range(m):")
    g.ind += 1
    names = {}
    if loads_first:
        # every operand's element is read before any output's is written: an output may then
        # share memory with an operand (a donated argument)
        for op in ops:
            for kv in op.operands:
                if kv.const is None and kv.level == "E" and kv.ext is not None and \
                        id(kv) not in names:
                    names[id(kv)] = f"e{kv.id}"
                    g.emit(f"e{kv.id} = {_elem(kv, flat)}")

    def read(kv, want):
        if kv.const is not None:
            return _const(kv.const, want)
        if kv.level == "W":
            return _read_w(kv, want)
        if kv.op is not None and id(kv.op) in members and kv.home in ("inline", "slot", "out"):
            return _cast(f"t{kv.id}", kv.dtype, want)
        key = id(kv)
        if key not in names:
            names[key] = f"e{kv.id}"
            g.emit(f"e{kv.id} = {_elem(kv, flat)}")
        return _cast(names[key], kv.dtype, want)

    for op in ops:
        args = [read(kv, t) for kv, t in zip(op.operands, op.in_dtypes)]
        g.emit(f"t{op.out.id} = {_inline_expr(op, args)}")
        if op.out.home in ("slot", "out"):
            g.emit(f"{_elem(op.out, flat)} = t{op.out.id}")
    g.ind -= 1


def _addr(kv, flat, transient, spec, g, want=None):
    """(address expression, stride expression) of operand ``kv`` of a loop call; per-row and
    constant operands are first written, as type ``want``, to a one-element slot (stride 0)."""
    want = kv.dtype if want is None else np.dtype(want)
    isz = kv.dtype.itemsize
    c = _cname(kv.dtype.char)
    if kv.level == "W" or kv.const is not None or kv.pattern in ("row", "scalar"):
        cw = _cname(want.char)
        s = transient[want.char]
        transient[want.char] = s + 1
        g.emit(f"sc_{cw}[{s}, 0] = {_read_w(kv, want)}")
        return f"b_{cw} + {s} * rs_{cw}", "0"
    if kv.ext is not None:
        x = f"x{kv.ext}"
    elif kv.home == "out":
        x = f"o{kv.out_index}"
    else:
        x = None
    if x is not None:
        # (addresses as signed ints: Numba types uintp + intp as a float)
        if kv.pattern == "col" or flat:
            return f"np.intp({x}.ctypes.data) + c0 * {isz}", str(isz)
        return f"np.intp({x}.ctypes.data) + r * {x}.strides[0] + c0 * {isz}", str(isz)
    return f"b_{c} + {kv.slot} * rs_{c}", str(isz)


def _gen_loopcall(g, op, flat, transient, spec):
    row = op.out.level == "W"
    addrs = []
    for kv, want in zip(op.operands, op.in_dtypes):
        addrs.append(_addr(kv, flat, transient, spec, g, want))
    if row:
        c = _cname(op.out.dtype.char)
        s = transient[op.out.dtype.char]
        transient[op.out.dtype.char] = s + 1
        addrs.append((f"b_{c} + {s} * rs_{c}", "0"))
        n = "1"
    else:
        addrs.append(_addr(op.out, flat, transient, spec, g))
        n = "m"
    flat_args = ", ".join(f"{a}, {st}" for a, st in addrs)
    g.emit(f"loop_call{len(addrs)}(lp[{op.loop_index}, 0], lp[{op.loop_index}, 1], {n}, "
           f"{flat_args})")
    if row:
        g.emit(f"w{op.out.id} = sc_{c}[{s}, 0]")


def _gen_reduce(g, op, flat, transient, spec):
    src = op.operands[0]
    dt = src.dtype
    isz = dt.itemsize
    c = _cname(dt.char)
    s = transient[dt.char]
    transient[dt.char] = s + 1
    acc = f"b_{c} + {s} * rs_{c}"
    w = f"w{op.out.id}"
    if op.rop in ("sum", "mean") and not flat and spec.T == spec.N and \
            len(_pairwise_leaves(0, spec.N)) <= _INLINE_SUM_LEAVES and inline_sum_ok(dt):
        # NumPy's add.reduce loop is ``acc += pairwise_sum(row)`` from acc = 0: the same
        # additions, in the same order, inline (no call, the row's leaves vectorized)
        ra = f"ra{op.out.id}"
        op.inline_sum = True
        g.emit(f"{ra} = {_row(src)}")
        g.emit(f"{w} = {_NP_NAMES[dt.char]}(0.0) + {_pairwise_expr(ra, 0, spec.N)}")
        _finish_reduce(g, op, dt, w)
        return
    a, _ = _addr(src, flat, transient, spec, g)
    if op.rop in ("sum", "mean"):
        # NumPy starts an add reduction from the identity and adds the whole row
        g.emit(f"sc_{c}[{s}, 0] = {_NP_NAMES[dt.char]}(0.0)")
        start, n = "0", "m"
    else:
        # a reduction without identity starts from the first element
        g.emit(f"sc_{c}[{s}, 0] = {_first(src, flat)}")
        start, n = str(isz), "m - 1"
    g.emit(f"loop_call3(lp[{op.loop_index}, 0], lp[{op.loop_index}, 1], {n}, {acc}, 0, "
           f"{a} + {start}, {isz}, {acc}, 0)")
    g.emit(f"{w} = sc_{c}[{s}, 0]")
    _finish_reduce(g, op, dt, w)


def _finish_reduce(g, op, dt, w):
    if op.rop == "mean":
        # numpy.mean divides the float sum by the count (an intp): in float64, then cast back
        if dt.char == "f":
            g.emit(f"{w} = np.float32(np.float64({w}) / np.float64(N))")
        else:
            g.emit(f"{w} = {w} / np.float64(N)")
    if op.out.is_output:
        g.emit(f"o{op.out.out_index}[r] = {w}")


# rows of up to this many blocks of the pairwise sum (512 elements: 4 blocks of 128) are
# summed inline; longer ones call NumPy's loop (each block inlined makes a kernel slower to
# compile, and a loop over blocks gains nothing on NumPy's loop)
_INLINE_SUM_LEAVES = 4
_inline_sum_checked = {}


def _pairwise_expr(arr, s, n):
    """NumPy's pairwise summation of ``arr[s:s + n]`` as an expression: runs of fewer than 8
    added in order, blocks of up to 128 by :func:`~.nbhelpers.pairwise_leaf`, longer ones
    split in two at half the length rounded down to a multiple of 8."""
    if n < 8:
        return "(" + " + ".join(f"{arr}[{s + i}]" for i in range(n)) + ")"
    if n <= 128:
        return f"pairwise_leaf({arr}, {s}, {n})"
    n2 = n // 2
    n2 -= n2 % 8
    return f"({_pairwise_expr(arr, s, n2)} + {_pairwise_expr(arr, s + n2, n - n2)})"


def _pairwise_leaves(s, n):
    """The blocks ``(start, length)`` that :func:`_pairwise_expr` sums by leaf calls."""
    if n <= 128:
        return [(s, n)]
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_leaves(s, n2) + _pairwise_leaves(s + n2, n - n2)


def _pairwise_py(a, s, n):
    """:func:`_pairwise_expr`'s order, in NumPy scalars (to check it against NumPy)."""
    if n < 8:
        r = a[s]
        for i in range(s + 1, s + n):
            r = r + a[i]
        return r
    if n <= 128:
        acc = [a[s + k] for k in range(8)]
        m = n - n % 8
        for i in range(s + 8, s + m, 8):
            for k in range(8):
                acc[k] = acc[k] + a[i + k]
        r = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        for i in range(s + m, s + n):
            r = r + a[i]
        return r
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_py(a, s, n2) + _pairwise_py(a, s + n2, n - n2)


def inline_sum_ok(dt):
    """Whether this NumPy's ``add.reduce`` of a contiguous row of ``dt`` is ``0 +
    pairwise(row)`` in :func:`_pairwise_expr`'s order, bit for bit, on rows of every shape of
    the tree whose values' magnitudes spread so that any other order shows (checked once per
    dtype and process; where it is not, kernels call NumPy's loop)."""
    dt = np.dtype(dt)
    ok = _inline_sum_checked.get(dt.char)
    if ok is None:
        rng = np.random.default_rng(2024)
        ok = True
        with np.errstate(all="ignore"):
            for n in (2, 3, 7, 8, 9, 15, 16, 17, 63, 127, 128, 129, 135, 136, 255, 256, 257,
                      300, 1000, 1031):
                row = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n)).astype(dt)
                vals = [dt.type(v) for v in row]
                want = np.add.reduce(row)
                got = dt.type(0.0) + _pairwise_py(vals, 0, n)
                if np.asarray(got, dt).tobytes() != np.asarray(want, dt).tobytes():
                    ok = False
                    break
        _inline_sum_checked[dt.char] = ok
    return ok


def _row(src):
    """Row ``r`` of a materialized per-element value, as a 1-d array."""
    if src.ext is not None:
        return f"x{src.ext}[r]"
    if src.home == "out":
        return f"o{src.out_index}[r]"
    return f"sc_{_cname(src.dtype.char)}[{src.slot}]"


def _first(src, flat):
    if src.ext is not None:
        return f"x{src.ext}[0]" if flat else f"x{src.ext}[r, 0]"
    if src.home == "out":
        return f"o{src.out_index}[0]" if flat else f"o{src.out_index}[r, 0]"
    return f"sc_{_cname(src.dtype.char)}[{src.slot}, 0]"
