"""``GradientTape``: records tnp operations on watched arrays and computes gradients backwards.

The tape is an operation listener (``tnp.extend.add_op_listener``): while any tape is active
the listener sees every tnp operation (functions, operators, methods, indexing); its ``before``
refuses in-place writes into tracked arrays before they happen, its ``after`` records. Other
listeners (a profiler, a tracer) coexist with it. Tapes are thread-local (each thread has its
own stack of active tapes, so replicas running in threads record independently); the listener
returns at once on a thread with no tape.

An operation is recorded when one of its inputs is watched (``tape.watch(x)``, a trainable
``Variable`` read inside the tape, or the output of a recorded operation). ``gradient`` walks
the records backwards and applies the VJP rules of :mod:`.registry`. The VJP computations are
themselves tnp operations, so an enclosing tape records them: nested tapes give higher-order
gradients.

Inputs saved by a record are checked against the version counter of their buffer: if one was
overwritten in place after it was recorded, ``gradient`` raises instead of returning a wrong
value. In-place writes that involve a watched array (``x[0] = ...``, ``x += ...``, ``out=``
into a watched array) are refused with a RuntimeError: write them functionally
(``tnp.where``, ``tnp.concatenate``) instead.
"""
from __future__ import annotations

import inspect
import threading
import weakref

import numpy as _np

import tnp
from tnp import extend as _ext
from tnp import ndarray, get_default_device
from tnp.extend import backend_array as _backend, device_of as _dev_of, version as version_of, wrap

from . import registry as _registry
from .variables import Variable

__all__ = ["GradientTape", "stop_gradient", "custom_gradient", "record_custom"]

_local = threading.local()
_active = [0]             # tapes active in all threads: the listener is installed while > 0
_active_lock = threading.Lock()
_listener = [None]        # its handle
_CPU = tnp.device("cpu")

_INPLACE_PREFIX = "inplace_"

# tnp_train.utils.tracing, bound at the first backward pass: importing tnp_train.utils here
# would import the layers, which import this module
_tracing = None


def _load_tracing():
    global _tracing
    from ..utils import tracing
    _tracing = tracing
    return tracing


_inexact_dtypes: dict = {}


def _inexact(dt):
    """Whether a dtype carries gradients (floating or complex, bfloat16 included); cached."""
    r = _inexact_dtypes.get(dt)
    if r is None:
        r = _inexact_dtypes[dt] = bool(_np.issubdtype(dt, _np.inexact)) or \
            _np.dtype(dt) == _np.dtype(tnp.bfloat16)   # ml_dtypes' kind is 'V'
    return r


def _thread_tapes():
    t = getattr(_local, "tapes", None)
    if t is None:
        t = _local.tapes = []
    return t


def _is_write(name, kwargs):
    return name == "setitem" or name.startswith(_INPLACE_PREFIX) or \
        (kwargs is not None and kwargs.get("out") is not None)


def _before(name, args, kwargs):
    # in-place writes (x[i] = v, x += y, out=...) are checked before they happen: refused
    # with nothing written if they touch an array a tape tracks
    if _is_write(name, kwargs):
        _hook(name, args, kwargs, None)


def _after(token, name, args, kwargs, result):
    if name == "setitem" or name.startswith(_INPLACE_PREFIX):
        return   # checked in _before; an in-place write records nothing
    _hook(name, args, kwargs, result)


def _hook(name, args, kwargs, result):
    tapes = getattr(_local, "tapes", None)
    if tapes:
        for tape in tapes:
            if tape._recording:
                tape._record(name, args, kwargs, result)
    passive = getattr(_local, "passive", None)
    if passive:
        for ref in list(passive):
            tape = ref()
            if tape is not None and tape._passive:
                tape._record(name, args, kwargs, result)


def _end_passive(ref):
    """A tape that left its ``with`` block unused stops following its arrays."""
    passive = getattr(_local, "passive", None)
    if passive is not None and ref in passive:
        passive.remove(ref)
    _deactivate()


def _activate():
    with _active_lock:
        _active[0] += 1
        if _active[0] == 1:
            _listener[0] = _ext.add_op_listener(before=_before, after=_after)


def _deactivate():
    with _active_lock:
        _active[0] -= 1
        if _active[0] == 0:
            _listener[0].remove()
            _listener[0] = None


def _arrays_in(result):
    """The array outputs of an operation, in order (tuples and lists, nested: histogramdd's
    ``(counts, [edges...])``)."""
    if isinstance(result, ndarray):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(_arrays_in(r))
        return out
    return []


class _Node:
    __slots__ = ("name", "args", "kwargs", "result", "outputs", "inputs", "versions", "rule")

    def __init__(self, name, args, kwargs, result, outputs, inputs, versions, rule):
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.result = result
        self.outputs = outputs      # arrays produced (their ids carry cotangents)
        self.inputs = inputs        # [(position or keyword, index in a list or None, array)]
        self.versions = versions    # [(array, version at record time)]
        self.rule = rule


def _rule_label(node):
    """What a hand-written backward is called in a trace: ``dense._make_backward`` for the
    ``backward`` closure that ``tnp_train.ops.dense._make_backward`` returns."""
    fn = getattr(node.rule, "grad_fn", None)
    if fn is None:
        return getattr(node.rule, "opname", node.name)
    module = str(getattr(fn, "__module__", "") or "").rsplit(".", 1)[-1]
    name = str(getattr(fn, "__qualname__", "") or getattr(fn, "__name__", "backward"))
    name = name.split(".<locals>", 1)[0]
    return f"{module}.{name}" if module else name


def _is_arraylike(x):
    return isinstance(x, (ndarray, _np.ndarray))


class GradientTape:
    """Mirrors ``tf.GradientTape(persistent=False, watch_accessed_variables=True)``."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._watched = {}          # id -> array (kept alive so ids stay unique)
        self._watched_vars = []
        self._nodes = []
        self._recording = False
        self._entered = False
        self._used = False
        self._thread = None
        self._passive = False       # following known arrays after the block, until gradient()
        self._passive_ref = None

    # ------------------------------------------------------------------ context
    def __enter__(self):
        if self._entered:
            raise RuntimeError("GradientTape: this tape is already recording")
        self._stop_passive()
        self._entered = True
        self._recording = True
        self._thread = threading.get_ident()
        _thread_tapes().append(self)
        _activate()
        return self

    def __exit__(self, *exc):
        tapes = _thread_tapes()
        if self in tapes:
            tapes.remove(self)
        self._recording = False
        self._entered = False
        if self._nodes and not self._used and exc[0] is None:
            # Until its first gradient() call, the tape keeps following operations on arrays it
            # already tracks, so ``tape.gradient(tnp.sum(y), w)`` works with the sum written
            # after the block (as in the TF 2.4 NumPy guide). It never watches anything new.
            self._passive = True
            ref = weakref.ref(self, _end_passive)
            self._passive_ref = ref
            if not hasattr(_local, "passive"):
                _local.passive = []
            _local.passive.append(ref)
        else:
            _deactivate()
        return False

    def _stop_passive(self):
        if self._passive:
            self._passive = False
            ref = self._passive_ref
            self._passive_ref = None
            passive = getattr(_local, "passive", None)
            if passive is not None and ref in passive:
                passive.remove(ref)
                _deactivate()

    class _Paused:
        def __init__(self, tape):
            self.tape = tape

        def __enter__(self):
            self.was = self.tape._recording
            self.tape._recording = False
            return self

        def __exit__(self, *exc):
            self.tape._recording = self.was
            return False

    def stop_recording(self):
        """Context manager: operations inside are not recorded on this tape."""
        if not self._entered:
            raise RuntimeError("GradientTape.stop_recording: the tape is not recording")
        return GradientTape._Paused(self)

    def reset(self):
        """Forget everything recorded and watched (the tape keeps recording if active)."""
        self._watched.clear()
        self._watched_vars.clear()
        self._nodes.clear()
        self._used = False

    # ------------------------------------------------------------------ watching
    def watch(self, tensor):
        """Track ``tensor`` (a tnp array, a Variable, or a nested structure of them)."""
        for t in _flatten(tensor):
            if not _is_arraylike(t):
                raise ValueError(f"GradientTape.watch: can only watch arrays, got {type(t).__name__}")
            if not _inexact(t.dtype):
                continue  # integer/boolean values carry no gradient, as in TF (TF warns)
            self._watch_one(t)

    def _watch_one(self, t):
        if id(t) not in self._watched:
            self._watched[id(t)] = t
            if isinstance(t, Variable):
                self._watched_vars.append(t)

    def watched_variables(self):
        """The variables watched by this tape, in the order they were first watched."""
        return tuple(self._watched_vars)

    def _is_watched(self, x):
        if id(x) in self._watched:
            return True
        if self._recording and self._watch_accessed and isinstance(x, Variable) and x._trainable and \
                _inexact(x.dtype):
            self._watch_one(x)
            return True
        return False

    # ------------------------------------------------------------------ recording
    def _record(self, name, args, kwargs, result):
        if kwargs and any(self._holds_watched(v) for k, v in kwargs.items() if k != "out"):
            args, kwargs = _positional(name, args, kwargs)
        watched = self._watched
        inputs = []
        for i, a in enumerate(args):
            ta = type(a)
            if ta is list or ta is tuple:
                self._scan(a, (), i, inputs)
            elif (isinstance(a, ndarray) or ta is _np.ndarray) and (
                    id(a) in watched or self._is_watched(a)):
                inputs.append((i, None, a))
        out = None
        if kwargs:
            out = kwargs.get("out")
            for k, v in kwargs.items():
                if k != "out":
                    if isinstance(v, ndarray):
                        if self._is_watched(v):
                            inputs.append((k, None, v))
                    elif type(v) is list or type(v) is tuple:
                        self._scan(v, (), k, inputs)
            if out is not None:
                for o in _flatten(out):
                    if isinstance(o, ndarray) and id(o) in watched:
                        raise RuntimeError(f"GradientTape: {name}(..., out=) writes into an array "
                                           f"the tape is tracking; call it without out=")
        if not inputs:
            return
        if name == "setitem" or name.startswith(_INPLACE_PREFIX):
            what = "item assignment" if name == "setitem" else name[len(_INPLACE_PREFIX):] + "="
            raise RuntimeError(
                f"GradientTape: in-place write ({what}) into or from an array the tape is "
                f"tracking (shape {getattr(args[0], 'shape', '?')}); gradients through in-place "
                f"writes are not recorded. Compute a new array instead (tnp.where, "
                f"tnp.concatenate, x + y).")
        if isinstance(result, ndarray):  # the common case: one array out
            outputs = [result] if all(result is not x for _, _, x in inputs) else []
        else:
            outputs = [o for o in _arrays_in(result) if all(o is not x for _, _, x in inputs)]
        if not outputs:
            return
        rule = _registry.VJPS.get(name)
        if rule is None and (name in _registry.NONDIFF or name in _registry.NO_ARRAY_OUTPUT):
            return  # the result carries no gradient: it is not watched
        # (backend array, its buffer's write count): checked before the rule uses the values
        versions = []
        for a in args:
            if isinstance(a, ndarray):
                b = _backend(a)
                versions.append((b, version_of(b)))
            elif type(a) is _np.ndarray:
                versions.append((a, version_of(a)))
            elif type(a) is list or type(a) is tuple:
                for e in _flatten(a):
                    if isinstance(e, ndarray):
                        b = _backend(e)
                        versions.append((b, version_of(b)))
                    elif type(e) is _np.ndarray:
                        versions.append((e, version_of(e)))
        for o in outputs:
            b = _backend(o)
            versions.append((b, version_of(b)))
            watched[id(o)] = o
        self._nodes.append(_Node(name, args, kwargs, result, outputs, inputs, versions, rule))

    def _scan(self, seq, path, pos, inputs):
        """Watched arrays inside (nested) lists and tuples, with their index paths."""
        for j, e in enumerate(seq):
            if isinstance(e, ndarray) or type(e) is _np.ndarray:
                if self._is_watched(e):
                    inputs.append((pos, path + (j,), e))
            elif type(e) is list or type(e) is tuple:
                self._scan(e, path + (j,), pos, inputs)

    def _holds_watched(self, v):
        if isinstance(v, ndarray) or type(v) is _np.ndarray:
            return self._is_watched(v)
        if type(v) is list or type(v) is tuple:
            return any((isinstance(e, ndarray) or type(e) is _np.ndarray) and self._is_watched(e)
                       for e in v)
        return False

    def _record_custom(self, args, result, rule):
        inputs = [(i, None, a) for i, a in enumerate(args)
                  if (isinstance(a, ndarray) or type(a) is _np.ndarray) and self._is_watched(a)]
        if not inputs:
            return
        outputs = _arrays_in(result)
        self._nodes.append(_Node("custom_gradient", args, {}, result, outputs, inputs, [], rule))
        for o in outputs:
            self._watched[id(o)] = o

    # ------------------------------------------------------------------ gradients
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none",
                 gradient_ready=None):
        """d(target)/d(sources), mirroring ``tf.GradientTape.gradient``.

        ``target``: an array or a nested structure (gradients of their sum); ``sources``: an
        array, Variable, or a nested structure of them (the result has the same structure);
        ``unconnected_gradients``: ``"none"`` (None for unconnected sources) or ``"zero"``.

        ``gradient_ready`` (tnp_train's addition): ``fn(source, grad)`` is called for each
        distinct source the moment no further contribution can reach its gradient, during the
        backward pass, in the order the gradients complete (for a feed-forward model: the last
        layer's first), so a strategy can start reducing a gradient while the rest of the
        backward pass runs. ``grad`` is exactly what ``gradient`` returns for that source
        (``None`` for an unconnected one unless ``unconnected_gradients="zero"``); sources that
        nothing recorded depends on are reported first. The order is a function of the
        recorded program alone, so it is the same on every replica that runs the same model.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: unconnected_gradients must be 'none' or "
                             f"'zero', got {unconnected_gradients!r}")
        self._check_usable("gradient")
        targets = _flatten(target)
        if output_gradients is None:
            ogs = [None] * len(targets)
        else:
            ogs = _flatten(output_gradients)
            if len(ogs) != len(targets):
                raise ValueError(f"GradientTape.gradient: {len(ogs)} output_gradients for "
                                 f"{len(targets)} targets")
        flat_sources = _flatten(sources)
        for s in flat_sources:
            if not _is_arraylike(s):
                raise ValueError(f"GradientTape.gradient: sources must be arrays or Variables, "
                                 f"got {type(s).__name__}")
        if gradient_ready is not None and not callable(gradient_ready):
            raise TypeError(f"GradientTape.gradient: gradient_ready must be callable, got "
                            f"{type(gradient_ready).__name__}")
        if not self._persistent:
            # a one-shot tape stops following arrays now: with no other tape about, the
            # backward pass then runs without the recording hook at all
            self._stop_passive()
        ready = None
        if gradient_ready is not None:
            ready = _ReadyReporter(self, flat_sources, gradient_ready, unconnected_gradients)
        with (_tracing or _load_tracing()).span("GradientTape.gradient", "backward"):
            grads = self._backward(targets, ogs, ready)
            if not self._persistent:
                self._used = True
                self._release()
            if ready is not None:
                out = [ready.final(s, grads) for s in flat_sources]
            else:
                out = [self._source_grad(s, grads, unconnected_gradients) for s in flat_sources]
        return _unflatten(sources, out)

    def _source_grad(self, s, grads, unconnected):
        if not _inexact(s.dtype):
            return None  # integer and boolean sources get None, as in TensorFlow
        g = grads.get(id(s))
        if g is None:
            if unconnected == "zero":
                return tnp.zeros(s.shape, dtype=s.dtype, device=_device_of(s))
            return None
        return _fit(g, s)

    def _check_usable(self, what):
        if self._used and not self._persistent:
            raise RuntimeError(f"GradientTape.{what} can only be called once on a non-persistent "
                               f"tape; create the tape with persistent=True to call it again")

    def _release(self):
        self._nodes = []
        self._watched = {}
        self._stop_passive()

    def _backward(self, targets, output_gradients, ready=None):
        """Cotangents of every recorded array reachable backwards from ``targets``; ``ready``
        (a :class:`_ReadyReporter`) is told after each node which sources became final."""
        grads = {}
        for t, og in zip(targets, output_gradients):
            if not _is_arraylike(t):
                continue
            if og is None:
                if not _inexact(t.dtype):
                    continue
                dev = _device_of(t)
                og = wrap(dev.backend.xp.ones(t.shape, dtype=t.dtype), dev)
            _accumulate(grads, t, og)
        was, was_passive = self._recording, self._passive
        self._recording = self._passive = False  # the backward pass: enclosing tapes only
        tracing = _tracing or _load_tracing()
        # profiling: a span per hand-written backward at level 2, per VJP rule at level 3
        traced = 3 if tracing.level(3) else 2 if tracing.level(2) else 0
        apply = self._apply if not traced else \
            lambda node, gs, grads: self._apply_traced(node, gs, grads, traced, tracing)
        try:
            if ready is not None:
                ready.start(grads)
            nodes = self._nodes
            for i in range(len(nodes) - 1, -1, -1):
                node = nodes[i]
                outs = node.outputs
                if len(outs) == 1:
                    g = grads.get(id(outs[0]))
                    if g is not None:
                        apply(node, [g], grads)
                else:
                    gs = [grads.get(id(o)) for o in outs]
                    if not all(g is None for g in gs):
                        apply(node, gs, grads)
                if ready is not None and i in ready.pending:
                    ready.report(i, grads)
        finally:
            self._recording, self._passive = was, was_passive
        return grads

    def _apply_traced(self, node, gs, grads, traced, tracing):
        if node.rule is None:
            if traced < 3:
                return self._apply(node, gs, grads)
            name = f"{node.name} (VJP)"
        else:
            name = f"{_rule_label(node)} (backward)"
        with tracing.span(name, "backward"):
            self._apply(node, gs, grads)

    def _apply(self, node, gs, grads):
        for arr, v in node.versions:
            if version_of(arr) != v:
                raise RuntimeError(
                    f"GradientTape: an array used by tnp.{node.name} (shape {arr.shape}) was "
                    f"modified in place after it was recorded; its gradient would be wrong. "
                    f"Copy it before modifying it, or modify it outside the tape.")
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
            _accumulate(grads, x, gx)

    # ------------------------------------------------------------------ jacobians
    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """d(target[i...])/d(source[j...]) of shape ``target.shape + source.shape`` for each
        source; mirrors ``tf.GradientTape.jacobian``."""
        self._check_usable("jacobian")
        flat_sources = _flatten(sources)
        n = int(_np.prod(target.shape))
        rows = [[] for _ in flat_sources]
        for i in range(n):
            onehot = tnp.zeros(n, dtype=target.dtype, device=_device_of(target))
            onehot[i] = 1
            grads = self._backward([target], [onehot.reshape(target.shape)])
            for k, s in enumerate(flat_sources):
                rows[k].append(self._source_grad(s, grads, unconnected_gradients))
        if not self._persistent:
            self._used = True
            self._release()
        out = []
        for s, r in zip(flat_sources, rows):
            if all(x is None for x in r):
                out.append(None)
                continue
            r = [x if x is not None else tnp.zeros(s.shape, dtype=s.dtype, device=_device_of(s)) for x in r]
            out.append(tnp.stack(r).reshape(tuple(target.shape) + tuple(s.shape)) if r else
                       tnp.zeros(tuple(target.shape) + tuple(s.shape), dtype=s.dtype))
        return _unflatten(sources, out)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per-example jacobian: ``target`` (b, ...) and ``source`` (b, ...) give
        (b, target dims..., source dims...); mirrors ``tf.GradientTape.batch_jacobian``."""
        self._check_usable("batch_jacobian")
        if target.shape[0] != source.shape[0]:
            raise ValueError(f"GradientTape.batch_jacobian: batch sizes differ (target "
                             f"{target.shape}, source {source.shape})")
        b = target.shape[0]
        inner = tuple(target.shape[1:])
        m = int(_np.prod(inner))
        cols = []
        for j in range(m):
            onehot = tnp.zeros((b, m), dtype=target.dtype, device=_device_of(target))
            onehot[:, j] = 1
            grads = self._backward([target], [onehot.reshape(target.shape)])
            g = self._source_grad(source, grads, unconnected_gradients)
            cols.append(g)
        if not self._persistent:
            self._used = True
            self._release()
        if all(c is None for c in cols):
            return None
        cols = [c if c is not None else tnp.zeros(source.shape, dtype=source.dtype) for c in cols]
        return tnp.stack(cols, axis=1).reshape((b,) + inner + tuple(source.shape[1:]))


class _ReadyReporter:
    """Reports each source's gradient to ``fn`` the moment it is final: a source's gradient is
    complete once the backward pass has passed the first recorded node (in program order) that
    reads it, since only nodes recorded after an array was made or watched can contribute."""

    __slots__ = ("tape", "fn", "unconnected", "pending", "done")

    def __init__(self, tape, sources, fn, unconnected):
        self.tape = tape
        self.fn = fn
        self.unconnected = unconnected
        self.done = {}                 # id(source) -> the gradient reported
        first_use = {}
        wanted = {}
        for s in sources:
            wanted.setdefault(id(s), s)
        for i, node in enumerate(tape._nodes):
            for _, _, x in node.inputs:
                k = id(x)
                if k in wanted and k not in first_use:
                    first_use[k] = i
        self.pending = {}              # node index -> the sources final after it
        for k, s in wanted.items():
            self.pending.setdefault(first_use.get(k, -1), []).append(s)

    def start(self, grads):
        # sources no recorded node reads: their gradient (a target's seed, or None) is final
        self.report(-1, grads)

    def report(self, i, grads):
        for s in self.pending.pop(i, ()):
            g = self.tape._source_grad(s, grads, self.unconnected)
            self.done[id(s)] = g
            self.fn(s, g)

    def final(self, s, grads):
        k = id(s)
        if k in self.done:
            return self.done[k]
        return self.tape._source_grad(s, grads, self.unconnected)


# ---------------------------------------------------------------------------- helpers
def _device_of(x):
    return _dev_of(x) if isinstance(x, ndarray) else _CPU


def _version(a):
    return version_of(a)


_signatures: dict = {}


def _positional(name, args, kwargs):
    """Arrays passed by keyword (``tnp.sum(a=x)``, ``multi_dot(arrays=[a, b])``) moved to their
    positions in NumPy's signature, so the rules (one per position) see them."""
    sig = _signatures.get(name, False)
    if sig is False:
        sig = None
        info = tnp.REGISTRY.get(name)
        fn = getattr(info, "numpy_function", None) if info is not None else None
        if fn is not None:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                sig = None
        _signatures[name] = sig
    if sig is None:
        return args, kwargs
    try:
        bound = sig.bind_partial(*args, **kwargs)
    except TypeError:
        return args, kwargs
    new_args, new_kwargs = [], {}
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    last = max((i for i, p in enumerate(positional) if p.name in bound.arguments), default=-1)
    for i, p in enumerate(positional[:last + 1]):
        if p.name in bound.arguments:
            new_args.append(bound.arguments[p.name])
        elif p.default is p.empty or p.default is _np._NoValue:
            return args, kwargs  # a gap with no usable default: leave the call as it was
        else:
            new_args.append(p.default)
    for p in params:
        if p.kind is p.VAR_POSITIONAL and p.name in bound.arguments:
            new_args.extend(bound.arguments[p.name])
        elif p.kind is p.KEYWORD_ONLY and p.name in bound.arguments:
            new_kwargs[p.name] = bound.arguments[p.name]
        elif p.kind is p.VAR_KEYWORD and p.name in bound.arguments:
            new_kwargs.update(bound.arguments[p.name])
    return tuple(new_args), new_kwargs


def _fit(g, x):
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
    if g.dtype != xd and (xd.kind in "fc" or _inexact(xd)):
        g = g.astype(xd)
    return g


def _accumulate(grads, x, g):
    g = _fit(g, x)
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


def _flatten(x):
    if isinstance(x, (list, tuple)) and not isinstance(x, ndarray):
        out = []
        for e in x:
            out.extend(_flatten(e))
        return out
    if isinstance(x, dict):
        out = []
        for k in sorted(x, key=repr):
            out.extend(_flatten(x[k]))
        return out
    return [x]


def _unflatten(structure, flat):
    return _build(structure, iter(flat))


def _build(s, it):
    # a module-level function, not a closure that calls itself: such a closure is a reference
    # cycle that would keep every gradient alive until the cyclic garbage collector runs
    if isinstance(s, (list, tuple)) and not isinstance(s, ndarray):
        vals = [_build(e, it) for e in s]
        if hasattr(s, "_fields"):
            return type(s)(*vals)
        return type(s)(vals)
    if isinstance(s, dict):
        built = {k: _build(s[k], it) for k in sorted(s, key=repr)}  # the order _flatten used
        return {k: built[k] for k in s}
    return next(it)


def stop_gradient(x):
    """The same values as ``x``, with no gradient flowing back (``tf.stop_gradient``)."""
    if isinstance(x, ndarray):
        return wrap(_backend(x), _dev_of(x))
    return tnp.asarray(x)


def _recording_tapes():
    """The tapes that record an operation run now on this thread: those inside their block
    and recording, and those following their arrays after the block (until a gradient)."""
    out = [t for t in getattr(_local, "tapes", None) or () if t._recording]
    for ref in getattr(_local, "passive", None) or ():
        t = ref()
        if t is not None and t._passive and t not in out:
            out.append(t)
    return out


def needs_gradient(arrays):
    """For each array, whether a recording tape on this thread tracks it (so a hand-written
    backward can skip the cotangents nobody asked for)."""
    tapes = _recording_tapes()
    return [any(t._is_watched(a) for t in tapes) if a is not None else False for a in arrays]


def recording():
    """Whether an operation run now would be recorded by a tape of this thread (inside a
    ``custom_gradient`` backward: whether a higher-order gradient is being taken)."""
    tapes = getattr(_local, "tapes", None)
    if tapes and any(t._recording for t in tapes):
        return True
    return bool(getattr(_local, "passive", None)) and bool(_recording_tapes())


class _RefusingRule:
    """The rule of a hand-written NumPy backward as seen by an enclosing tape: it raises if a
    gradient ever flows back through it (a gradient of a gradient)."""
    __slots__ = ("opname",)

    def __init__(self, opname):
        self.opname = opname

    def for_position(self, i):
        def outer(ans, *args, **kwargs):
            def inner(g):
                raise NotImplementedError(
                    f"{self.opname}: gradients of gradients are not supported (its backward pass "
                    f"is hand-written NumPy, not recorded); take the inner gradient outside the "
                    f"enclosing tape, or write this part with plain tnp operations")
            return inner
        return outer

    def for_keyword(self, name):
        return None


def first_order_only(opname, grad_fn, inputs):
    """Wrap the hand-written NumPy backward ``grad_fn`` of a ``custom_gradient`` op whose
    inputs are ``inputs``: when an enclosing tape records the backward pass, its results are
    recorded there with a rule that raises if that tape later differentiates through them, so
    a gradient of a gradient is refused rather than silently incomplete. First-order use (and
    an enclosing tape that never asks) costs nothing more."""
    def wrapped(*dys):
        res = grad_fn(*dys)
        if recording():
            outs = tuple(r for r in (res if isinstance(res, (tuple, list)) else (res,))
                         if isinstance(r, ndarray))
            if outs:
                record_custom(tuple(dys) + tuple(a for a in inputs if a is not None), outs,
                              _RefusingRule(opname))
        return res
    return wrapped


def record_custom(args, result, rule):
    """Record a hand-differentiated operation on every tape that records now."""
    for tape in _recording_tapes():
        tape._record_custom(args, result, rule)


class _CustomRule:
    """The rule of a ``custom_gradient`` node: ``grad_fn`` gives every input's cotangent at
    once, so it runs once per backward pass (cached on the cotangent it was given), not once
    per input."""
    __slots__ = ("grad_fn", "_last")

    def __init__(self, grad_fn):
        self.grad_fn = grad_fn
        self._last = None

    def _grads(self, g):
        last = self._last
        if last is not None and last[0] is g:
            return last[1]
        first = g[0] if isinstance(g, tuple) else g
        dev = _dev_of(first) if isinstance(first, ndarray) else None
        # a hand-written backward makes its arrays on the device of the cotangent
        if dev is not None and dev is not get_default_device():
            with dev:
                gs = self.grad_fn(*(g if isinstance(g, tuple) else (g,)))
        else:
            gs = self.grad_fn(*(g if isinstance(g, tuple) else (g,)))
        gs = gs if isinstance(gs, (tuple, list)) else (gs,)
        self._last = (g, gs)
        return gs

    def for_position(self, i):
        def outer(ans, *args, **kwargs):
            def inner(g):
                gs = self._grads(g)
                return gs[i] if i < len(gs) else None
            return inner
        return outer

    def for_keyword(self, name):
        return None


def custom_gradient(f):
    """Decorator: ``f(*x)`` returns ``(y, grad_fn)``; the tape uses ``grad_fn(dy)`` (one
    cotangent per input) instead of differentiating ``f``'s body (``tf.custom_gradient``)."""
    import functools

    @functools.wraps(f)
    def wrapped(*args):
        tapes = getattr(_local, "tapes", None) or []
        paused = [t for t in tapes if t._recording]
        for t in paused:
            t._recording = False
        try:
            y, grad_fn = f(*args)
        finally:
            for t in paused:
                t._recording = True
        record_custom(args, y, _CustomRule(grad_fn))
        return y
    return wrapped
