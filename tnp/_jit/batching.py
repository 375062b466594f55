"""``tnp.vmap``: a function of one example run on a batch of examples, as one program.

The function is traced once on placeholders shaped like *one* example (:mod:`.tracer`); the
graph is then run on the whole batch, node by node, each operation given the batched arrays
through a *batching rule*: elementwise operations align ranks and broadcast, reductions and
shape operations shift their axes past the batch axis, ``matmul`` batches its operands,
indexing keeps the batch axis in front. An operation without a rule runs once per example (a
loop over the batch for that operation only, with one ``VmapFallbackWarning`` naming it), so any
traced function is vectorized where the rules reach and exact everywhere. A function that cannot
be traced at all (Python needing a value, an operation whose shape depends on the data) runs
once per example, as a Python loop would, after one warning.
"""
from __future__ import annotations

import operator
import threading
import warnings

import numpy as np

from .._core import listeners as _listeners
from .._core.listeners import reporting_suspended
from .._core.ndarray import ndarray as _ndarray, wrap as _wrap
from .._core.scalar import Scalar as _Scalar
from .graph import Cap, Ref
from .replay import PY_OPERATORS, _astype, _mT, _T, _view
from .tracer import TraceError, UnsupportedTrace, make_placeholder, trace as _trace

__all__ = ["vmap", "VmapFallbackWarning"]


class VmapFallbackWarning(UserWarning):
    """Part of a vmapped function runs once per example (an operation without a batching
    rule, or a function that cannot be traced)."""


_ELEMENTWISE_FUNCS = {"where", "clip", "copy", "positive", "nan_to_num", "round", "around",
                      "real", "imag", "conj", "conjugate", "fix", "isclose", "astype", "view"}
_REDUCTIONS = {"sum", "mean", "max", "min", "prod", "amax", "amin", "any", "all", "std", "var",
               "nansum", "nanmean", "nanmax", "nanmin", "nanprod", "argmax", "argmin",
               "count_nonzero", "cumsum", "cumprod", "logsumexp"}
_OPERATOR_NAMES = set(PY_OPERATORS) - {"__matmul__", "__rmatmul__", "__imatmul__",
                                       "__divmod__", "__rdivmod__"}


def _is_ufunc_name(name):
    """An elementwise ufunc (not a generalized one such as matmul, whose rule is its own)."""
    from .._core.dispatch import REGISTRY

    info = REGISTRY.get(name)
    if info is None or info.kind != "ufunc":
        return False
    u = getattr(np, name, None)
    return getattr(u, "signature", None) is None


# ----------------------------------------------------------------------------- the program
class _Batched:
    """A value while the batched program runs: the array, and whether its axis 0 is the batch
    (else it is the same for every example)."""

    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


def _resolve(t, env, objs):
    tt = type(t)
    if tt is Ref:
        return env[t.value.id]
    if tt is Cap:
        o = t.obj
        return _Batched(o._a if isinstance(o, _ndarray) else o, False)
    if tt is list or tt is tuple:
        return tt(_resolve(e, env, objs) for e in t)
    if tt is dict:
        return {k: _resolve(v, env, objs) for k, v in t.items()}
    if tt is slice:
        return slice(_resolve(t.start, env, objs), _resolve(t.stop, env, objs),
                     _resolve(t.step, env, objs))
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return tt(*(_resolve(e, env, objs) for e in t))
    return t


def _leaves(x, out):
    if type(x) is _Batched:
        out.append(x)
    elif type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
        for e in x:
            _leaves(e, out)
    elif type(x) is dict:
        for e in x.values():
            _leaves(e, out)
    elif type(x) is slice:
        _leaves((x.start, x.stop, x.step), out)
    return out


def _strip(x, pick):
    """The structure with each _Batched replaced by ``pick(leaf)``."""
    t = type(x)
    if t is _Batched:
        return pick(x)
    if t is list or t is tuple:
        return t(_strip(e, pick) for e in x)
    if t is dict:
        return {k: _strip(v, pick) for k, v in x.items()}
    if t is slice:
        return slice(_strip(x.start, pick), _strip(x.stop, pick), _strip(x.step, pick))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return t(*(_strip(e, pick) for e in x))
    return x


def _call(node, args, kwargs):
    """Run ``node``'s operation on backend values (``args``/``kwargs`` without _Batched)."""
    if node.mode == "numpy":
        return node.call(*args, **kwargs)

    def w(x):
        return _wrap(x, None) if isinstance(x, (np.ndarray, np.generic)) else x
    wa = _map_arrays(args, w)
    wk = _map_arrays(kwargs, w)
    r = node.call(*wa, **wk)
    return _map_arrays(r, lambda x: x._a if isinstance(x, _ndarray) else x)


def _map_arrays(x, f):
    t = type(x)
    if t is list or t is tuple:
        return t(_map_arrays(e, f) for e in x)
    if t is dict:
        return {k: _map_arrays(v, f) for k, v in x.items()}
    return f(x)


def _assign(template, value, batched, env):
    t = type(template)
    if t is Ref:
        env[template.value.id] = _Batched(value, batched)
    elif t is list or t is tuple or (isinstance(template, tuple) and hasattr(template, "_fields")):
        for tm, v in zip(template, value):
            _assign(tm, v, batched, env)
    elif t is dict:
        for k, tm in template.items():
            _assign(tm, value[k], batched, env)


def _rank(leaf_template):
    return len(leaf_template.value.shape) if type(leaf_template) in (Ref, Cap) else \
        np.ndim(leaf_template)


def _norm_axis(ax, r):
    return ax + r if ax < 0 else ax


class _NoRule(Exception):
    pass


def _rule(node, args, kwargs, B):
    """The batched result of ``node`` (inputs batched on axis 0), or _NoRule."""
    name = node.name
    op = node.operator
    call = node.call
    ranks = [len(np.shape(x.a)) - (1 if x.b else 0) for x in _leaves((args, kwargs), [])]
    if op in _OPERATOR_NAMES or (node.mode == "numpy" and (
            _is_ufunc_name(name) or name in _ELEMENTWISE_FUNCS)) or call in (_astype, _view):
        if call is _view and len(args) > 1 and args[1] is not None:
            raise _NoRule
        if name in ("where", "clip") or op in _OPERATOR_NAMES or _is_ufunc_name(name) or \
                call in (_astype, _view) or name in _ELEMENTWISE_FUNCS:
            if "out" in kwargs or "axis" in kwargs:
                raise _NoRule
            R = max(ranks, default=0)

            def align(x):
                if not x.b:
                    return x.a
                r = np.ndim(x.a) - 1
                return x.a.reshape((B,) + (1,) * (R - r) + x.a.shape[1:]) if r < R else x.a
            return _call(node, _strip(args, align), _strip(kwargs, align))
    plain = lambda x: x.a  # noqa: E731
    if name in _REDUCTIONS and node.mode == "numpy":
        if len(args) != 1 or not (type(args[0]) is _Batched and args[0].b) or "out" in kwargs:
            raise _NoRule
        x = args[0]
        r = np.ndim(x.a) - 1
        kw = dict(_strip(kwargs, plain))
        ax = kw.get("axis")
        if ax is None:
            if name in ("argmax", "argmin", "cumsum", "cumprod"):
                return call(x.a.reshape(B, -1), **{**kw, "axis": 1})
            kw["axis"] = tuple(range(1, r + 1))
        elif isinstance(ax, (tuple, list)):
            kw["axis"] = tuple(_norm_axis(a, r) + 1 for a in ax)
        else:
            kw["axis"] = _norm_axis(ax, r) + 1
        return call(x.a, **kw)
    if name == "matmul" or op in ("__matmul__", "__rmatmul__"):
        if kwargs or len(args) != 2:
            raise _NoRule
        a, b = args
        ra, rb = np.ndim(a.a) - a.b, np.ndim(b.a) - b.b
        if ra == 0 or rb == 0:
            raise _NoRule
        A, Bm = a.a, b.a
        squeeze = []
        if ra == 1:
            A = A[..., None, :]
            squeeze.append(-2)
        if rb == 1:
            Bm = Bm[..., :, None]
            squeeze.append(-1)
        if a.b and b.b:     # batch axes in front on both: align the other ranks
            ra2, rb2 = max(ra, 2), max(rb, 2)
            if ra2 < rb2:
                A = A.reshape((B,) + (1,) * (rb2 - ra2) + A.shape[1:])
            elif rb2 < ra2:
                Bm = Bm.reshape((B,) + (1,) * (ra2 - rb2) + Bm.shape[1:])
        elif b.b and not a.b:
            ra2, rb2 = max(ra, 2), max(rb, 2)
            if ra2 > rb2:
                Bm = Bm.reshape((B,) + (1,) * (ra2 - rb2) + Bm.shape[1:])
        elif a.b and not b.b:
            ra2, rb2 = max(ra, 2), max(rb, 2)
            if rb2 > ra2:
                A = A.reshape((B,) + (1,) * (rb2 - ra2) + A.shape[1:])
        if A.shape[-1] == 1 and A.ndim >= 2 and Bm.ndim >= 2 and Bm.shape[-2] == 1:
            out = np.multiply(A, Bm)      # outer products (per-example weight gradients): exact
        elif a.b and not b.b and Bm.ndim == 2 and A.ndim >= 2:
            # the examples' rows against one matrix: one GEMM over all of them
            out = np.matmul(A.reshape(-1, A.shape[-1]), Bm).reshape(A.shape[:-1] + Bm.shape[-1:])
        elif b.b and not a.b and A.ndim == 2 and Bm.ndim >= 2:
            # one matrix against the examples' columns: (A @ B_i) = (B_i^T A^T)^T in one GEMM
            lead = Bm.shape[:-2]
            cols = np.moveaxis(Bm, -2, 0).reshape(Bm.shape[-2], -1)
            out = np.moveaxis(np.matmul(A, cols).reshape((A.shape[0],) + lead + Bm.shape[-1:]),
                              0, -2)
        else:
            out = np.matmul(A, Bm)
        if -1 in squeeze:
            out = out[..., 0]
            if -2 in squeeze:
                out = out[..., 0]
        elif -2 in squeeze:
            out = out[..., 0, :]
        return out
    if len(args) >= 1 and type(args[0]) is _Batched and args[0].b and not any(
            x.b for x in _leaves((args[1:], kwargs), [])):
        x = args[0].a
        r = np.ndim(x) - 1
        rest = _strip(args[1:], plain)
        kw = _strip(kwargs, plain)
        if call is _T or (name == "transpose" and not rest and not kw.get("axes")):
            return x.transpose((0,) + tuple(range(r, 0, -1)))
        if call is _mT or name == "matrix_transpose":
            return np.swapaxes(x, -1, -2)
        if name == "transpose":
            axes = kw.get("axes", rest[0] if len(rest) == 1 else rest)
            if isinstance(axes, int):
                axes = (axes,)
            return x.transpose((0,) + tuple(_norm_axis(a, r) + 1 for a in axes))
        if name == "swapaxes":
            a1, a2 = (list(rest) + [kw.get("axis1"), kw.get("axis2")])[:2] if rest else \
                (kw["axis1"], kw["axis2"])
            return np.swapaxes(x, _norm_axis(a1, r) + 1, _norm_axis(a2, r) + 1)
        if name == "reshape":
            shape = kw.get("shape", kw.get("newshape"))
            if shape is None:
                shape = rest[0] if len(rest) == 1 else tuple(rest)
            if isinstance(shape, int):
                shape = (shape,)
            if kw.get("order", "C") != "C":
                raise _NoRule
            return x.reshape((B,) + tuple(shape))
        if name in ("ravel", "flatten"):
            return x.reshape(B, -1)
        if name == "expand_dims":
            ax = kw.get("axis", rest[0] if rest else None)
            axes = ax if isinstance(ax, (tuple, list)) else (ax,)
            rr = r + len(axes)
            return np.expand_dims(x, tuple(_norm_axis(a, rr) + 1 for a in axes))
        if name == "squeeze":
            ax = kw.get("axis", rest[0] if rest else None)
            if ax is None:
                ax = tuple(i for i, d in enumerate(x.shape[1:]) if d == 1)
            axes = ax if isinstance(ax, (tuple, list)) else (ax,)
            return np.squeeze(x, tuple(_norm_axis(a, r) + 1 for a in axes))
        if name == "broadcast_to":
            shape = kw.get("shape", rest[0] if rest else None)
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            xx = x.reshape((B,) + (1,) * (len(shape) - r) + x.shape[1:])
            return np.broadcast_to(xx, (B,) + shape)
        if name == "getitem" and node.mode == "numpy":
            key = rest[0]
            key = key if isinstance(key, tuple) else (key,)
            # one advanced index at most (two apart would move to the front): the batch axis
            # then stays in front
            adv = [k for k in key if isinstance(k, (np.ndarray, list, np.generic)) and
                   not isinstance(k, np.generic) or isinstance(k, bool)]
            if len(adv) > 1 or any(isinstance(k, bool) or (isinstance(k, np.ndarray) and
                                                           k.dtype == bool) for k in adv):
                raise _NoRule
            return x[(slice(None),) + key]
    if name == "take_along_axis" and node.mode == "numpy" and len(args) >= 2:
        arr, idx = args[0], args[1]
        kw = dict(_strip(kwargs, plain))
        ax = kw.pop("axis", args[2] if len(args) > 2 else None)
        if ax is None or kw or type(arr) is not _Batched or type(idx) is not _Batched:
            raise _NoRule
        r = np.ndim(arr.a) - arr.b
        full = [e.a if e.b else np.broadcast_to(e.a, (B,) + np.shape(e.a)) for e in (arr, idx)]
        return call(full[0], full[1], axis=_norm_axis(ax, r) + 1)
    if name in ("concatenate", "stack") and node.mode == "numpy" and args and \
            isinstance(args[0], (list, tuple)):
        arrs = args[0]
        r = max(np.ndim(e.a) - e.b for e in arrs)
        full = [e.a if e.b else np.broadcast_to(e.a, (B,) + np.shape(e.a)) for e in arrs]
        kw = dict(_strip(kwargs, plain))
        ax = kw.get("axis", args[1] if len(args) > 1 else 0)
        if ax is None:
            raise _NoRule
        rr = r + 1 if name == "stack" else r
        kw["axis"] = _norm_axis(ax, rr) + 1
        return call(full, **kw)
    raise _NoRule


def _per_example(node, args, kwargs, B):
    """``node`` run once per example (slices of the batched inputs), results stacked."""
    outs = []
    for i in range(B):
        pick = lambda x, i=i: x.a[i] if x.b else x.a  # noqa: E731
        outs.append(_call(node, _strip(args, pick), _strip(kwargs, pick)))
    return _stack_results(outs)


def _stack_results(outs):
    first = outs[0]
    if isinstance(first, dict):
        return {k: _stack_results([o[k] for o in outs]) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_stack_results([o[k] for o in outs]) for k in range(len(first)))
    if first is None:
        return None
    return np.stack([np.asarray(o) for o in outs])


# ----------------------------------------------------------------------------- the entry point
class _VMapped:
    def __init__(self, fn, in_axes):
        self.fn = fn
        self.in_axes = in_axes
        self._graphs = {}
        self._warned = set()
        self._lock = threading.Lock()
        self.fallbacks = []        # names of the operations that ran per example

    def _warn(self, key, msg):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(msg, VmapFallbackWarning, stacklevel=3)

    def __call__(self, *args):
        axes = self.in_axes if isinstance(self.in_axes, (tuple, list)) else \
            (self.in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        flat, sizes = [], set()

        def collect(x, ax):
            if isinstance(x, (_ndarray, np.ndarray)) and not isinstance(x, np.generic):
                a = x._a if isinstance(x, _ndarray) else x
                if ax is not None:
                    if ax != 0:
                        raise ValueError(f"vmap: in_axes must be 0 or None, got {ax}")
                    if np.ndim(a) == 0:
                        raise ValueError("vmap: an argument mapped over axis 0 is a scalar")
                    sizes.add(a.shape[0])
                flat.append((a, ax is not None))
            elif isinstance(x, (list, tuple)):
                for e in x:
                    collect(e, ax)
            elif isinstance(x, dict):
                for e in x.values():
                    collect(e, ax)
        for a, ax in zip(args, axes):
            collect(a, ax)
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped arguments must have one size along axis 0, got "
                             f"{sorted(sizes) if sizes else 'no mapped array'}")
        B = sizes.pop()
        if _listeners._entries or B == 0:
            return self._loop(args, axes, B)
        key = tuple((a.shape[1:] if b else a.shape, a.dtype, b) for a, b in flat) + \
            tuple(_py_key(a) for a in args)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._trace(args, axes, flat)
            self._graphs[key] = graph
        if graph is False:
            return self._loop(args, axes, B)
        return self._run(graph, flat, B)

    def _trace(self, args, axes, flat):
        it = iter(flat)

        def make_inputs(ctx):
            k = [0]

            def repl(x):
                if isinstance(x, (_ndarray, np.ndarray)) and not isinstance(x, np.generic):
                    a, b = next(it)
                    t = make_placeholder(a[0] if b else a)
                    ctx.add_input(t, k[0])
                    k[0] += 1
                    return t
                if isinstance(x, (list, tuple)):
                    return type(x)(repl(e) for e in x)
                if isinstance(x, dict):
                    return {kk: repl(v) for kk, v in x.items()}
                return x
            return tuple(repl(a) for a in args), {}
        try:
            return _trace(self.fn, args, {}, make_inputs, getattr(self.fn, "__name__", "f"))
        except (TraceError, UnsupportedTrace) as e:
            self._warn(("trace", str(e)), f"vmap: {e}; the function runs once per example")
            return False

    def _loop(self, args, axes, B):
        outs = []
        for i in range(B):
            def pick(x, ax):
                if isinstance(x, (_ndarray, np.ndarray)) and not isinstance(x, np.generic):
                    return x[i] if ax is not None else x
                if isinstance(x, (list, tuple)):
                    return type(x)(pick(e, ax) for e in x)
                if isinstance(x, dict):
                    return {k: pick(v, ax) for k, v in x.items()}
                return x
            outs.append(self.fn(*(pick(a, ax) for a, ax in zip(args, axes))))
        return _stack_outputs(outs)

    def _run(self, graph, flat, B):
        env = {}
        for v, (a, b) in zip(graph.inputs, flat):
            env[v.id] = _Batched(a, b)
        with reporting_suspended():
            for node in graph.nodes:
                args = _resolve(node.args, env, None)
                kwargs = _resolve(node.kwargs, env, None)
                leaves = _leaves((args, kwargs), [])
                batched = any(x.b for x in leaves)
                for w in node.writes:       # a write into a value some example changes
                    cur = env.get(w.id)
                    if cur is None or (batched and not cur.b):
                        raise UnsupportedTrace("vmap: an in-place write of batched values into "
                                               "an array that is not batched")
                if node.name.startswith("effect:") or not batched:
                    if node.name.startswith("effect:") and batched:
                        r = _per_example(node, args, kwargs, B)
                    else:
                        r = _call(node, _strip(args, lambda x: x.a), _strip(kwargs,
                                                                            lambda x: x.a))
                        _assign(node.result, r, False, env)
                        continue
                else:
                    try:
                        r = _rule(node, args, kwargs, B)
                    except _NoRule:
                        self.fallbacks.append(node.name)
                        self._warn(("op", node.name), f"vmap: no batching rule for "
                                   f"{node.name}; it runs once per example")
                        r = _per_example(node, args, kwargs, B)
                _assign(node.result, r, True, env)
        out = _resolve(graph.output, env, None)
        return _finish(out, B)


def _py_key(a):
    if isinstance(a, (_ndarray, np.ndarray, list, tuple, dict)):
        return "arr"
    try:
        hash(a)
        return (type(a), a)
    except TypeError:
        return (type(a), id(a))


def _finish(out, B):
    t = type(out)
    if t is _Batched:
        a = out.a if out.b else np.broadcast_to(out.a, (B,) + np.shape(out.a)).copy()
        return _wrap(a, None)
    if t is list or t is tuple:
        return t(_finish(e, B) for e in out)
    if t is dict:
        return {k: _finish(v, B) for k, v in out.items()}
    return out


def _stack_outputs(outs):
    first = outs[0] if outs else None
    if first is None:
        return None
    if isinstance(first, (list, tuple)):
        return type(first)(_stack_outputs([o[k] for o in outs]) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack_outputs([o[k] for o in outs]) for k in first}
    from .. import stack

    return stack(outs)


def vmap(fn, in_axes=0):
    """``fn`` of one example, run on a batch: ``vmap(f)(xs)`` equals
    ``tnp.stack([f(x) for x in xs])`` (outputs stacked on a new axis 0, structures kept), as
    ``jax.vmap``. ``in_axes``: 0 (the argument is mapped over its axis 0) or None (the same for
    every example), one for all arguments or one per argument. See the module docstring."""
    if not callable(fn):
        raise TypeError(f"vmap: expected a callable, got {type(fn).__name__}")
    return _VMapped(fn, in_axes)
