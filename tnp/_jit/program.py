"""The replay: a traced graph as one generated Python function, plus its memory plan.

Each unfused node becomes one line that calls its NumPy function on NumPy arrays (no tnp
dispatch, no wrapping); each fused group becomes one kernel call at the place of its last
member. Intermediate arrays that no output can reach live in buffers allocated once per
program and reused by every call (values whose lifetimes do not overlap share a buffer);
outputs are new arrays every call. A set of buffers serves one call at a time: a call made
while another is running (another thread) takes a fresh set.
"""
from __future__ import annotations

import linecache
import math
import sys
import time
import warnings

import numpy as np

from .._core.devices import CPU
from .._core.listeners import reporting_suspended
from .._core.ndarray import bump_version as _bump_version
from .._core.ndarray import ndarray as _ndarray, wrap as _wrap
from .codegen import compile_kernel
from .fusion import classify
from .graph import Cap, Ref
from .kernel import build_kernel

__all__ = ["Program", "build_program", "set_replay_observer"]

_INF = math.inf
_counter = [0]
_clock = time.perf_counter


def _unwrap_result(r):
    if isinstance(r, _ndarray):
        return r._a
    t = type(r)
    if t is tuple or t is list:
        return t(_unwrap_result(e) for e in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):
        return t(*(_unwrap_result(e) for e in r))
    return r


def _wrap_backend(a):
    return _wrap(a, CPU)


def _scalar_of(a):
    return a if isinstance(a, np.generic) else a.reshape(-1)[0]


def _probe_refs(store, k):
    a = store[k]
    return sys.getrefcount(a)


_ONLY_OURS = _probe_refs([np.empty(1)], 0)   # the count when the list alone holds the array


def _recycled(store, k, shape, dtype):
    """An output array for slot ``k``: last call's, when nobody but ``store`` holds it any more
    (the caller dropped it, with every view of it), else a new one. A fresh array each call
    costs page faults for large outputs; a dropped one is indistinguishable from a new one."""
    a = store[k]
    if a is None or sys.getrefcount(a) > _ONLY_OURS:
        a = np.empty(shape, dtype)
        store[k] = a
    return a


class _Emitter:
    def __init__(self):
        self.lines = []
        self.ns = {"np": np, "_W": _wrap_backend, "_U": _unwrap_result, "_BV": _bump_version,
                   "_suspended": reporting_suspended, "_S": _scalar_of, "_R": _recycled,
                   "_clk": _clock, "_TN": _node_time}
        self.recycled = []      # (shape, dtype) of each recycled output slot
        self.nconst = 0

    def const(self, obj):
        for k, v in self.ns.items():
            if v is obj and k.startswith("K"):
                return k
        name = f"K{self.nconst}"
        self.nconst += 1
        self.ns[name] = obj
        return name

    def literal(self, c):
        t = type(c)
        if c is None or t is bool or t is int or t is str:
            return repr(c)
        if t is float and math.isfinite(c):
            return repr(c)
        if c is Ellipsis:
            return "..."
        return self.const(c)

    def render(self, t, eager=False):
        tt = type(t)
        if tt is Ref:
            return f"_W(v{t.value.id})" if eager and not t.value.opaque else f"v{t.value.id}"
        if tt is Cap:
            return self.const(t.obj) if eager else f"v{t.value.id}"
        if tt is list:
            return "[" + ", ".join(self.render(e, eager) for e in t) + "]"
        if tt is tuple:
            inner = ", ".join(self.render(e, eager) for e in t)
            return "(" + inner + ("," if len(t) == 1 else "") + ")"
        if tt is dict:
            return "{" + ", ".join(f"{self.literal(k)}: {self.render(v, eager)}"
                                   for k, v in t.items()) + "}"
        if tt is slice:
            return (f"slice({self.render(t.start, eager)}, {self.render(t.stop, eager)}, "
                    f"{self.render(t.step, eager)})")
        if isinstance(t, tuple) and hasattr(t, "_fields"):
            return f"{self.const(tt)}(" + ", ".join(self.render(e, eager) for e in t) + ")"
        return self.literal(t)

    def call_args(self, args, kwargs, eager=False):
        parts = [self.render(a, eager) for a in args]
        for k, v in kwargs.items():
            if k.isidentifier():
                parts.append(f"{k}={self.render(v, eager)}")
            else:
                parts.append(f"**{{{self.literal(k)}: {self.render(v, eager)}}}")
        return ", ".join(parts)


def _lhs(node):
    """How the node's result is assigned: a target expression, or None for a discarded one;
    plus extra lines for nested results."""
    new = {v.id for v in node.outputs}
    r = node.result

    def leaf(t):
        if type(t) is Ref and t.value.id in new:
            return f"v{t.value.id}"
        return None

    if type(r) is Ref:
        return leaf(r), []
    if type(r) in (tuple, list) and all(type(e) in (Ref, Cap) or e is None or
                                         type(e) in (int, float, bool, str) for e in r):
        names = [leaf(e) if type(e) is Ref else None for e in r]
        if not any(names):
            return None, []
        return "(" + ", ".join(n or "_" for n in names) + ("," if len(names) == 1 else "") \
            + ")", []
    extra = []

    def paths(t, p):
        if type(t) is Ref and t.value.id in new:
            extra.append(f"v{t.value.id} = _r{p}")
        elif type(t) in (tuple, list) or isinstance(t, tuple):
            for i, e in enumerate(t):
                paths(e, f"{p}[{i}]")
        elif type(t) is dict:
            for k, e in t.items():
                paths(e, f"{p}[{k!r}]")

    paths(r, "")
    return ("_r" if extra else None), extra


class Program:
    """A compiled program for one signature (see the module docstring). ``call(arrays,
    objs)`` runs it on the backend arrays of the flattened array arguments (``objs``: the
    caller's objects for them) and returns the function's result."""

    def __init__(self, graph, groups, specs, fn, finish, source, buffer_specs, n_recycled,
                 capture_checks):
        self.graph = graph
        self.groups = groups
        self.specs = specs
        self._fn = fn
        self._finish = finish
        self.source = source
        self._buffer_specs = buffer_specs
        self._n_recycled = n_recycled
        self._pool = []
        self.output_template = graph.output
        self._capture_checks = capture_checks
        self._captures_same = None   # a quicker check, made when the full one passes
        self._captures_remade = 0
        self._plan = None
        self._variants = {}         # (level, timed) -> the observed replay

    def _take(self):
        try:
            return self._pool.pop()
        except IndexError:
            return (tuple(np.empty(shape, dtype) for shape, dtype in self._buffer_specs),
                    [None] * self._n_recycled)

    def captures_unchanged(self):
        same = self._captures_same
        if same is not None and same():
            return True
        for obj, shape, dtype, strides in self._capture_checks:
            a = obj._a if isinstance(obj, _ndarray) else obj
            if getattr(a, "shape", None) != shape or a.dtype != dtype or \
                    getattr(a, "strides", None) != strides:
                return False
        # a capture whose backend array is replaced again and again (a strategy's parameter
        # views) keeps the full check alone: the quick one is remade a few times at most
        self._captures_remade += 1
        self._captures_same = _same_backends(self._capture_checks) \
            if self._captures_remade <= _REMAKE_LIMIT else None
        return True

    def run(self, backends):
        """The backend values of the graph's outputs (in ``graph.output_values()`` order)."""
        fn = self._fn if _observer is None else self._observed_fn()
        bufs = self._take()
        try:
            return fn(*backends, *bufs)
        finally:
            self._pool.append(bufs)

    def call(self, backends, objs):
        if _observer is not None:
            return self._call_observed(backends, objs)
        bufs = self._take()
        try:
            outs = self._fn(*backends, *bufs)
        finally:
            self._pool.append(bufs)
        return self._finish(outs, objs)


    def _observed_fn(self):
        """The replay the installed observer asks for (made on first use, then kept)."""
        obs = _observer
        if obs is None:
            return self._fn
        key = (int(obs.level), bool(obs.time_nodes))
        fn = self._variants.get(key)
        if fn is None:
            if self._plan is None or key == (0, False):
                fn = self._fn
            else:
                fn, _, _, n_recycled = _emit_replay(self._plan, *key)
                assert n_recycled == self._n_recycled   # the same slots, shared buffers
            self._variants[key] = fn
        return fn

    def _call_observed(self, backends, objs):
        fn = self._observed_fn()
        bufs = self._take()
        try:
            outs = fn(*backends, *bufs)
        finally:
            self._pool.append(bufs)
        return self._finish(outs, objs)


_REMAKE_LIMIT = 4


def _same_backends(checks):
    """A function telling whether every captured object still holds the backend array it
    held when the full check passed, with the same shape (the one attribute that can change
    in place, with it the strides: ``shape`` is settable, ``resize`` works in place; the dtype
    cannot change). One generated expression: a compiled step checks its captures (the
    model's variables) at every call."""
    ns = {}
    terms = []
    for i, (obj, _, _, _) in enumerate(checks):
        a = obj._a if isinstance(obj, _ndarray) else obj
        ns[f"K{i}"], ns[f"A{i}"], ns[f"S{i}"] = obj, a, getattr(a, "shape", None)
        read = f"K{i}._a" if isinstance(obj, _ndarray) else f"K{i}"
        terms.append(f"{read} is A{i} and A{i}.shape == S{i}")
    exec("def same():\n    return " + " and ".join(terms or ["True"]) + "\n", ns)
    return ns["same"]


def _positions(graph, groups):
    """The position each unit runs at: a group at its last member's node index."""
    group_of_node = {}
    for g in groups:
        for n in g.nodes:
            group_of_node[n.id] = g
    pos_of_group = {g.id: max(n.id for n in g.nodes) for g in groups}
    return group_of_node, pos_of_group


def _memory_plan(graph, groups, group_of_node, pos_of_group, eligible, in_place=()):
    """Buffer index for each value in ``eligible`` (value id -> value): a value gets a buffer
    of its shape and dtype, shared with values whose storage is dead before it is made.

    A value in ``in_place`` (made by a NumPy ufunc with ``out=``) may also take the buffer of
    an operand that its own node reads last, as NumPy's eager temporaries do (``a * b + c``
    adds in place into the product): NumPy gives a ufunc whose output overlaps an input the
    result it gives without the overlap, so this is exact, and a chain then runs in one or two
    buffers that stay in cache instead of cycling through three or more."""
    last_use = {}
    for n in graph.nodes:
        g = group_of_node.get(n.id)
        if g is not None:
            continue
        for v in n.inputs():
            last_use[v.storage] = max(last_use.get(v.storage, -1), n.id)
        for v in n.writes:
            last_use[v.storage] = max(last_use.get(v.storage, -1), n.id)
    for g in groups:
        p = pos_of_group[g.id]
        for v in g.inputs:
            last_use[v.storage] = max(last_use.get(v.storage, -1), p)
    for v in graph.output_values():
        last_use[v.storage] = _INF
    for v in graph.inputs + graph.captures:
        last_use[v.storage] = _INF
    defs = []
    for vid, (v, pos) in eligible.items():
        if last_use.get(v.storage, -1) == _INF:
            continue
        if v.storage != v.id:
            continue
        defs.append((pos, v))
    defs.sort(key=lambda p: (p[0], p[1].id))
    in_place = set(in_place)
    buffers = []        # (shape, dtype)
    free = {}           # (shape, dtype) -> [(free from position, index)]
    assigned = {}
    for pos, v in defs:
        key = (v.shape, v.dtype.str)
        pool = free.setdefault(key, [])
        idx = None
        limit = pos + 1 if v.id in in_place else pos
        for i, (after, bi) in enumerate(pool):
            if after < limit:
                idx = bi
                pool.pop(i)
                break
        if idx is None:
            idx = len(buffers)
            buffers.append((v.shape, v.dtype))
        assigned[v.id] = idx
        end = last_use.get(v.storage, pos)
        pool.append((max(end, pos), idx))
    return assigned, buffers


def _keeps(n):
    """Whether node ``n`` must run even if nothing reads what it makes: it writes, draws
    random numbers (the generator advances) or is an effect."""
    name = n.name
    return bool(n.writes) or name.startswith(("effect:", "observe:", "random.", "inplace_")) or \
        name == "setitem" or (n.mode == "control" and n.sub.effectful)


def _prune(graph):
    """Drop the nodes whose values reach no output, write or effect (the creation of state
    while tracing, a value computed and never used): a replay computes only what is used."""
    live = {v.id for v in graph.output_values()}
    live.update(v.storage for v in graph.output_values())
    kept = []
    for n in reversed(graph.nodes):
        if _keeps(n) or any(v.id in live or v.storage in live for v in n.outputs):
            kept.append(n)
            for v in n.inputs():
                live.add(v.id)
                live.add(v.storage)
            for v in n.writes:
                live.add(v.id)
                live.add(v.storage)
    kept.reverse()
    graph.nodes[:] = kept


_NO_KERNELS = [None, False]     # why Numba cannot build kernels here ('' when it can); warned


def kernels_unavailable():
    """Why this process cannot build fused kernels (Numba is not installed, or fails to
    import), or ``''``. Asked once, at the first program with something to fuse."""
    if _NO_KERNELS[0] is None:
        try:
            import numba  # noqa: F401
            _NO_KERNELS[0] = ""
        except Exception as e:
            _NO_KERNELS[0] = (f"Numba, a dependency of tnp, could not be imported "
                              f"({type(e).__name__}: {e})")
    return _NO_KERNELS[0]


def _warn_no_kernels():
    if _NO_KERNELS[1]:
        return
    _NO_KERNELS[1] = True
    from .api import JitFallbackWarning, _user_stacklevel

    warnings.warn(f"tnp.jit: {_NO_KERNELS[0]}; compiled functions run without fused kernels "
                  f"(each operation one NumPy call, at about NumPy's speed)",
                  JitFallbackWarning, stacklevel=_user_stacklevel())


def build_program(graph, fuse=True, donated=()):
    """Compile ``graph`` into a :class:`Program`. ``donated``: indices of the flattened array
    arguments whose memory outputs may take over."""
    from .fusion import find_groups

    _prune(graph)
    groups = find_groups(graph) if fuse else []
    if groups and kernels_unavailable():     # the replay alone, no kernels: said once
        _warn_no_kernels()
        for g in groups:
            for n in g.nodes:
                n.info = None
        groups = []
    specs = {}
    kept = []
    for g in groups:
        spec = build_kernel(g)
        if spec is not None:
            try:
                spec.function = compile_kernel(spec)
                spec.function.compile(_numba_signature(spec))
            except Exception as e:     # a kernel the generator got wrong: NumPy runs them
                warnings.warn(f"tnp.jit: a fused kernel did not compile ({type(e).__name__}: "
                              f"{str(e)[:300]}); its operations run unfused. Please report "
                              f"this", RuntimeWarning, stacklevel=2)
                spec = None
        if spec is None:
            for n in g.nodes:
                n.info = None
            continue
        specs[g.id] = spec
        kept.append(g)
    groups = kept
    group_of_node, pos_of_group = _positions(graph, groups)

    # what can live in a reused buffer: kernel outputs, and ufunc results (given out=)
    eligible = {}
    ufunc_nodes = {}
    for n in graph.nodes:
        if n.id in group_of_node:
            continue
        info = classify(n)
        if info is not None and info.kind == "ew" and info.op not in ("where", "cast"):
            u = info.loop.ufunc if info.loop is not None else getattr(np, info.op)
            v = info.out
            if v.c_contiguous and len(v.shape) >= 1:
                ufunc_nodes[n.id] = (u, info)
                eligible[v.id] = (v, n.id)
    for g in groups:
        p = pos_of_group[g.id]
        for v in g.outputs:
            if not v.scalar and v.shape != ():
                eligible[v.id] = (v, p)
    assigned, buffers = _memory_plan(graph, groups, group_of_node, pos_of_group, eligible,
                                     in_place={info.out.id for _, info in ufunc_nodes.values()})
    donations = _donations(graph, groups, specs, group_of_node, pos_of_group, ufunc_nodes,
                           donated)
    buffer_specs = list(buffers)
    scratch_index = {}
    for g in groups:
        spec = specs[g.id]
        for c, k in sorted(spec.scratch.items()):
            scratch_index[(g.id, c)] = len(buffer_specs)
            buffer_specs.append(((max(k, 1), max(spec.T, 1)), np.dtype(c)))

    plan = _Plan(graph, specs, group_of_node, pos_of_group, ufunc_nodes, assigned,
                 scratch_index, donations, len(buffer_specs))
    fn, finish, source, n_recycled = _emit_replay(plan, 0, False)
    captures = [(obj, getattr(obj._a if isinstance(obj, _ndarray) else obj, "shape", None),
                 (obj._a if isinstance(obj, _ndarray) else obj).dtype,
                 getattr(obj._a if isinstance(obj, _ndarray) else obj, "strides", None))
                for obj in graph.capture_objs]
    prog = Program(graph, groups, [specs[g.id] for g in groups], fn, finish, source,
                   buffer_specs, n_recycled, captures)
    prog._plan = plan
    return prog


class _Plan:
    """What the replays of one program share (its kernels, memory plan and donations): the
    plain replay and the observed ones (:func:`set_replay_observer`) differ only in the lines
    an observer adds, so they run the same kernels on the same buffers."""

    __slots__ = ("graph", "specs", "group_of_node", "pos_of_group", "ufunc_nodes", "assigned",
                 "scratch_index", "donations", "n_buffers")

    def __init__(self, graph, specs, group_of_node, pos_of_group, ufunc_nodes, assigned,
                 scratch_index, donations, n_buffers):
        self.graph = graph
        self.specs = specs
        self.group_of_node = group_of_node
        self.pos_of_group = pos_of_group
        self.ufunc_nodes = ufunc_nodes
        self.assigned = assigned
        self.scratch_index = scratch_index
        self.donations = donations
        self.n_buffers = n_buffers


def _emit_replay(plan, level, timed):
    """The replay function of ``plan``: ``(fn, finish, source, n_recycled)``. ``level``: the
    observations (:func:`tnp.extend.observe`) of that level or less are called in place (none
    at 0); ``timed``: each kernel and each other node is timed for the observer."""
    graph = plan.graph
    specs, group_of_node, pos_of_group = plan.specs, plan.group_of_node, plan.pos_of_group
    assigned, scratch_index, donations = plan.assigned, plan.scratch_index, plan.donations
    em = _Emitter()
    em.output_storages = {v.storage for v in graph.output_values()}
    lines = []
    arg_names = [f"v{v.id}" for v in graph.inputs]
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in graph.fn_name)
    suffix = "" if not level and not timed else f"_observed{level}{'t' if timed else ''}"
    fname = f"_tnp_jit_{safe}{suffix}_{_counter[0]}"
    _counter[0] += 1
    lines.append(f"def {fname}({', '.join(arg_names + ['_B', '_O'])}):")
    body = []
    for v, obj in zip(graph.captures, graph.capture_objs):
        body.append(f"v{v.id} = {em.const(obj)}" + ("._a" if isinstance(obj, _ndarray) else ""))
    if plan.n_buffers:
        body.append("(" + ", ".join(f"b{i}" for i in range(plan.n_buffers)) + ",) = _B")
    emitted_groups = set()
    for n in graph.nodes:
        g = group_of_node.get(n.id)
        if g is not None:
            if n.id == pos_of_group[g.id] and g.id not in emitted_groups:
                emitted_groups.add(g.id)
                unit = _emit_group(em, g, specs[g.id], assigned, scratch_index, donations)
                body.extend(_timed(em, unit, _kernel_label(g)) if timed else unit)
            continue
        if n.observe_level is not None:
            if n.observe_level <= level:
                body.extend(_emit_node(em, n, None, assigned, donations))
            continue
        unit = _emit_node(em, n, plan.ufunc_nodes.get(n.id), assigned, donations)
        body.extend(_timed(em, unit, n.name) if timed else unit)
    outs = graph.output_values()
    body.append("return (" + "".join(f"v{v.id}, " for v in outs) + ")")
    lines.extend("    " + b for b in body)
    source = "\n".join(lines) + "\n"
    filename = f"<tnp.jit {graph.fn_name} #{_counter[0]}>"
    em.ns["_ND"] = _ndarray
    finish_src = _emit_finish(em, graph)
    source += "\n" + finish_src
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), em.ns)
    return em.ns[fname], em.ns["_finish"], source, len(em.recycled)


# ----------------------------------------------------------------------------- observers
# the replay observer (set_replay_observer), read once per call of a compiled program
_observer = None


def set_replay_observer(observer):
    """Install ``observer`` (None removes it); returns the one it replaces.

    While one is installed, every compiled program runs a replay made for what it asks, read
    at each call: ``observer.level`` (an int: the observations of that level or less run in
    place) and ``observer.time_nodes`` (true: each kernel call and each other node of the
    program is timed, and ``observer.node_time(label, t_start, t_end)`` is called after it,
    with ``time.perf_counter()`` values). The replays share the plain replay's kernels and
    buffers; the plain replay, which runs while none is installed, is unchanged."""
    global _observer
    previous, _observer = _observer, observer
    return previous


def _node_time(label, t0):
    t1 = _clock()
    obs = _observer
    if obs is not None:         # removed during the call: the node's time goes nowhere
        obs.node_time(label, t0, t1)


def _timed(em, unit, label):
    return ["_t = _clk()"] + unit + [f"_TN({em.literal(label)}, _t)"]


def _kernel_label(g):
    names = []
    for n in g.nodes:
        name = n.operator or n.name
        if name not in names:
            names.append(name)
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    return f"fused kernel k{g.id} ({len(g.nodes)} ops: {shown})"


def _emit_node(em, n, ufunc_plan, assigned, donations):
    lines = _emit_node_call(em, n, ufunc_plan, assigned, donations)
    if n.writes and n.mode not in ("eager", "control"):
        # an in-place write counts as one, as eagerly (a tape, or a cached read of a
        # variable, compares versions); an eager node's own operation bumps them
        lines.extend(f"_BV(v{v.id})" for v in n.writes)
    return lines


def _emit_node_call(em, n, ufunc_plan, assigned, donations):
    lhs, extra = _lhs(n)
    if n.mode == "eager":
        call = f"{em.const(n.call)}({em.call_args(n.args, n.kwargs, eager=True)})"
        expr = f"_U({call})"
        pre = ["with _suspended():"]
        line = f"    {lhs} = {expr}" if lhs else f"    {expr}"
        return pre + [line] + extra
    if ufunc_plan is not None and lhs is not None:
        u, info = ufunc_plan
        v = info.out
        ops = []
        for kind, x in info.operands:
            ops.append(f"v{x.id}" if kind == "v" else em.literal(x))
        if v.id in assigned:
            out = f", out=b{assigned[v.id]}"
        elif v.id in donations:
            out = f", out=v{donations[v.id]}"
        else:
            out = f", out={_recycle(em, v)}"
        return [f"{lhs} = {em.const(u)}({', '.join(ops)}{out})"] + extra
    call = _direct_call(em, n) or f"{em.const(n.call)}({em.call_args(n.args, n.kwargs)})"
    return [f"{lhs} = {call}" if lhs else call] + extra


def _numba_signature(spec):
    """The argument types a kernel is called with (compiled when the program is built, so a
    kernel that does not compile never reaches a call)."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    tys = [types.int64] * 3
    for value, form in spec.args:
        dt = from_dtype(value.dtype)
        if form == "scalar":
            tys.append(dt)
        elif form == "full" and not spec.flat:
            tys.append(types.Array(dt, 2, "C"))
        else:
            tys.append(types.Array(dt, 1, "C"))
    for value, level in spec.outputs:
        tys.append(types.Array(from_dtype(value.dtype), 2 if level == "E" and not spec.flat
                               else 1, "C"))
    for c in sorted(spec.scratch):
        tys.append(types.Array(from_dtype(np.dtype(c)), 2, "C"))
    tys.append(types.Array(types.int64, 2, "C"))
    return tuple(tys)


def _donations(graph, groups, specs, group_of_node, pos_of_group, ufunc_nodes, donated):
    """Outputs written into donated arguments: output value id -> the donated value id. An
    output may take the memory of a donated argument of its shape and dtype that nothing reads
    afterwards, where it is made by a NumPy ufunc (NumPy handles operands that are the output)
    or by a kernel of one elementwise pass (each element is read before it is written)."""
    if not donated:
        return {}
    inputs = [v for v in graph.inputs if v.index in donated and not v.scalar and v.c_contiguous]
    if not inputs:
        return {}
    outputs = graph.output_values()
    out_storages = {v.storage for v in outputs}
    last = {}
    for n in graph.nodes:
        g = group_of_node.get(n.id)
        pos = pos_of_group[g.id] if g is not None else n.id
        for v in n.inputs() + list(n.writes):
            last[v.storage] = max(last.get(v.storage, -1), pos)
    taken = {}
    free = [v for v in inputs if v.storage not in out_storages and
            not any(v.storage == u.storage and u is not v for u in graph.inputs)]
    producers = {}
    for n in graph.nodes:
        if n.id in ufunc_nodes:
            producers[ufunc_nodes[n.id][1].out.id] = (n.id, None)
    for g in groups:
        spec = specs[g.id]
        if len(spec.steps_text) == 1 and spec.steps_text[0].startswith("column loop"):
            for v, level in spec.outputs:
                if level == "E":
                    producers[v.id] = (pos_of_group[g.id], spec)
    for o in outputs:
        if o.id in taken or o.id not in producers or o.storage != o.id:
            continue
        pos, spec = producers[o.id]
        for d in free:
            if d.shape == o.shape and d.dtype == o.dtype and last.get(d.storage, -1) <= pos \
                    and (spec is None or any(a[0] is d for a in spec.args)):
                taken[o.id] = d.id
                free.remove(d)
                break
    return taken


def _recycle(em, v):
    k = len(em.recycled)
    em.recycled.append((tuple(v.shape), v.dtype))
    return f"_R(_O, {k}, {tuple(v.shape)!r}, {em.const(v.dtype)})"


def _emit_finish(em, graph):
    """The source of ``finish(outs, objs)``: the function's result from the program's output
    values (tnp arrays; an argument returned unchanged is the caller's own object)."""
    index = {}
    for i, v in enumerate(graph.output_values()):
        index.setdefault(v.id, i)
    inputs = {v.id: v.index for v in graph.inputs}
    lines = ["def _finish(outs, objs):"]
    made = set()

    def leaf(v):
        name = f"r{v.id}"
        if v.id not in made:
            made.add(v.id)
            if v.id in inputs:      # the argument itself, as the eager call returns it
                lines.append(f"    {name} = objs[{inputs[v.id]}]")
            else:
                lines.append(f"    {name} = _W(outs[{index[v.id]}])")
        return name

    def expr(t):
        tt = type(t)
        if tt is Ref:
            return leaf(t.value)
        if tt is Cap:
            return em.const(t.obj)
        if tt is tuple:
            return "(" + "".join(expr(e) + ", " for e in t) + ")"
        if tt is list:
            return "[" + ", ".join(expr(e) for e in t) + "]"
        if tt is dict:
            return "{" + ", ".join(f"{em.literal(k)}: {expr(e)}" for k, e in t.items()) + "}"
        if isinstance(t, tuple) and hasattr(t, "_fields"):
            return f"{em.const(tt)}(" + ", ".join(expr(e) for e in t) + ")"
        return em.literal(t)

    result = expr(graph.output)
    lines.append(f"    return {result}")
    return "\n".join(lines) + "\n"


def _emit_group(em, g, spec, assigned, scratch_index, donations):
    lines = []
    R, N = spec.R, spec.N
    args = [str(R), str(N), str(spec.T)]
    for value, form in spec.args:
        name = f"v{value.id}"
        if form == "scalar":
            args.append(name if value.scalar else f"_S({name})")
        elif form == "full":
            want = (R * N,) if spec.flat else (R, N)
            args.append(name if tuple(value.shape) == want else f"{name}.reshape({want!r})")
        elif form == "row":
            args.append(name if tuple(value.shape) == (R,) else f"{name}.reshape({R})")
        else:   # 'col'
            args.append(name if tuple(value.shape) == (N,) else f"{name}.reshape({N})")
    outs_after = []
    for i, (value, level) in enumerate(spec.outputs):
        o = f"_o{g.id}_{i}"
        if value.id in assigned:
            lines.append(f"{o} = b{assigned[value.id]}")
        elif value.id in donations:
            lines.append(f"{o} = v{donations[value.id]}")
        elif value.scalar:
            lines.append(f"{o} = np.empty(1, {em.const(value.dtype)})")
        else:
            lines.append(f"{o} = {_recycle(em, value)}")
        if level == "E":
            want = (R * N,) if spec.flat else (R, N)
        else:
            want = (R,)
        shape = (1,) if value.scalar else tuple(value.shape)
        args.append(o if shape == want else f"{o}.reshape({want!r})")
        outs_after.append(f"v{value.id} = {o}[0]" if value.scalar else f"v{value.id} = {o}")
    for c in sorted(spec.scratch):
        args.append(f"b{scratch_index[(g.id, c)]}")
    lp = np.array([[ref.fn, ref.data] for ref in spec.loops] or [[0, 0]], dtype=np.int64)
    args.append(em.const(lp))
    lines.append(f"{em.const(spec.function)}({', '.join(args)})")
    lines.extend(outs_after)
    return lines


# ----------------------------------------------------------------------------- direct calls
# A replay line costs what its call costs: NumPy's Python-level functions (np.reshape,
# np.sum, np.take_along_axis...) spend a microsecond or more in Python before reaching the C
# method or ufunc they end in. Where the traced operand is a NumPy array (not a scalar), the
# replay calls that method or ufunc itself, with the same arguments: the same result, the
# same errors, a fraction of the cost.
def _method_forms():
    from . import replay as _r

    return {_r._reshape: "reshape", _r._transpose: "transpose", _r._astype: "astype",
            _r._copy: "copy", _r._flatten: "flatten"}


_METHOD_FORMS = None
_ADD_REDUCE = np.add.reduce


def _array_operand(t):
    """The Value of template leaf ``t`` when it is a NumPy array at replay, else None."""
    if type(t) is not Ref and type(t) is not Cap:
        return None
    v = t.value
    return None if v.scalar or v.opaque else v


def _direct_call(em, n):
    """The source of a cheaper exact form of numpy-mode node ``n``'s call, or None."""
    global _METHOD_FORMS
    if n.mode != "numpy" or not n.args:
        return None
    if _METHOD_FORMS is None:
        _METHOD_FORMS = _method_forms()
    call, args, kwargs = n.call, n.args, n.kwargs
    try:
        method = _METHOD_FORMS.get(call)
    except TypeError:                      # an unhashable callable
        return None
    first = args[0]
    if method is not None:
        # the replay's own method helpers: the method itself (a scalar has them too)
        if type(first) is not Ref and type(first) is not Cap:
            return None
        if method == "reshape":       # the helper's defaults, left to the method
            kwargs = {k: x for k, x in kwargs.items()
                      if not (k == "order" and x == "C" or k == "copy" and x is None)}
        return f"{em.render(first)}.{method}({em.call_args(args[1:], kwargs)})"
    if call is _r_T():
        return f"{em.render(first)}.T" if len(args) == 1 and not kwargs else None
    if call is np.broadcast_to and (type(first) is Ref or type(first) is Cap) and \
            not first.value.opaque:
        return _broadcast_size_one(em, n, first.value, em.render(first), args, kwargs)
    v = _array_operand(first)
    if v is None:
        return None
    a = em.render(first)
    if call is np.reshape:
        if len(args) == 2 and not kwargs or \
                len(args) == 2 and kwargs in ({"order": "C"}, {"copy": None}):
            return f"{a}.reshape({em.render(args[1])})"
        return None
    if call is np.swapaxes:
        if len(args) == 3 and not kwargs:
            return f"{a}.swapaxes({em.render(args[1])}, {em.render(args[2])})"
        return None
    if call is np.squeeze:
        if len(args) <= 2 and set(kwargs) <= {"axis"}:
            return f"{a}.squeeze({em.call_args(args[1:], kwargs)})"
        return None
    if call is np.sum or call == _ADD_REDUCE:
        # np.sum of an ndarray is np.add.reduce (fromnumeric's _wrapreduction), whose
        # default axis is 0, not None: written out
        params = dict(zip(("axis", "dtype", "out", "keepdims"), args[1:]))
        if len(args) > 5 or any(k in params for k in kwargs) or \
                not set(kwargs) <= {"axis", "dtype", "out", "keepdims"}:
            return None
        params.update(kwargs)
        if call is np.sum:
            params.setdefault("axis", None)
        return f"{em.const(_ADD_REDUCE)}({a}, {em.call_args((), params)})"
    if call is np.take_along_axis:
        return _take_along_axis(em, v, a, args, kwargs)
    return None


def _broadcast_size_one(em, n, v, a, args, kwargs):
    """``np.broadcast_to(a, shape)`` of a one-element C-contiguous array or a NumPy scalar (a
    loss's seed gradient spread over the batch) as the same view made by ``np.ndarray``
    (every stride 0), a fraction of the cost. Only where the view stays inside the program:
    NumPy's is read-only, this one is not (the traced code never wrote into it: NumPy would
    have refused), and no output of the program may show that."""
    if len(args) != 2 or kwargs or not (v.scalar or v.c_contiguous) or \
            math.prod(v.shape) != 1:
        return None
    shape = args[1]
    if type(shape) is int:
        shape = (shape,)
    if type(shape) is not tuple or not all(type(d) is int and d >= 0 for d in shape):
        return None
    out = n.outputs[0] if len(n.outputs) == 1 else None
    if out is None or tuple(out.shape) != shape or out.dtype != v.dtype or \
            out.storage in em.output_storages:
        return None
    return (f"{em.const(np.ndarray)}({shape!r}, {em.const(v.dtype)}, {a}, 0, "
            f"{(0,) * len(shape)!r})")


def _r_T():
    from . import replay as _r

    return _r._T


def _take_along_axis(em, v, a, args, kwargs):
    """``np.take_along_axis(arr, indices, axis)`` as the fancy index NumPy builds for it
    (an ``arange`` per other axis, made once), for an integer ``indices`` of ``arr``'s rank."""
    params = dict(zip(("indices", "axis"), args[1:]))
    if len(args) > 3 or any(k in params for k in kwargs) or not set(kwargs) <= {"axis"}:
        return None
    params.update(kwargs)
    idx = _array_operand(params.get("indices"))
    axis = params.get("axis", -1)
    nd = len(v.shape)
    if idx is None or idx.dtype.kind not in "iu" or len(idx.shape) != nd or \
            type(axis) is not int or not -nd <= axis < nd or nd == 0:
        return None
    axis %= nd
    parts = []
    for d, size in enumerate(v.shape):
        if d == axis:
            parts.append(em.render(params["indices"]))
        else:
            shape = [1] * nd
            shape[d] = size
            parts.append(em.const(np.arange(size).reshape(shape)))
    return f"{a}[{', '.join(parts)},]"
