"""``GradientTape``: records tnp operations on watched arrays and computes gradients backwards.

The tape is an operation listener (``tnp.extend.add_op_listener``): while any tape is active
the listener sees every tnp operation (functions, operators, methods, indexing); its ``before``
prepares in-place writes before they happen (copies what a write destroys and a rule needs,
or refuses a write it cannot record), its ``after`` records. Other
listeners (a profiler, a tracer) coexist with it. Tapes are thread-local (each thread has its
own stack of active tapes, so replicas running in threads record independently); the listener
returns at once on a thread with no tape.

An operation is recorded when one of its inputs is watched (``tape.watch(x)``, a trainable
``Variable`` read inside the tape, or the output of a recorded operation). ``gradient`` walks
the records backwards and applies the VJP rules of :mod:`.registry`. The VJP computations are
themselves tnp operations, so an enclosing tape records them: nested tapes give higher-order
gradients.

In-place writes that involve a tracked array (``y += b``, ``y[mask] = 0``, ``out=y``,
``tnp.add.at``, ``tnp.copyto``, ``y.sort()``, writes through views) are recorded as new
versions of the same object (see :mod:`.inplace`, PyTorch's design): ``gradient`` gives the
gradient of the program as written. Values a rule reads are checked against the version
counter of their buffer: if one was overwritten after it was recorded, ``gradient`` raises
instead of returning a wrong value.
"""
from __future__ import annotations

import inspect
import itertools
import threading
import types as _types
import weakref

import numpy as _np

import tnp
from tnp import extend as _ext
from tnp import ndarray, get_default_device
from tnp.extend import backend_array as _backend, device_of as _dev_of, version as version_of, wrap
from tnp.extend import is_inexact as _inexact   # the dtypes that carry gradients

from ..utils.tree import flatten, pack_sequence_as
from . import inplace as _inp
from . import registry as _registry
from .variables import Variable

__all__ = ["GradientTape", "stop_gradient", "custom_gradient", "record_custom"]

_local = threading.local()
_active = [0]             # tapes active in all threads: the listener is installed while > 0
_active_lock = threading.Lock()
_listener = [None]        # its handle
_CPU = tnp.device("cpu")

_INPLACE_PREFIX = "inplace_"
_READS = _inp.READS
_saved_cache: dict = {}     # (name, tracked positions) -> the positions whose values are read

# tnp_train.utils.tracing, bound at the first backward pass: importing tnp_train.utils here
# would import the layers, which import this module
_tracing = None


def _load_tracing():
    global _tracing
    from ..utils import tracing
    _tracing = tracing
    return tracing


def _thread_tapes():
    t = getattr(_local, "tapes", None)
    if t is None:
        t = _local.tapes = []
    return t


def _is_write(name, kwargs):
    return name == "setitem" or name.startswith(_INPLACE_PREFIX) or \
        (kwargs is not None and kwargs.get("out") is not None)


def _before(name, args, kwargs):
    # in-place writes (x[i] = v, x += y, out=...) are prepared before they happen: the tapes
    # that follow an array involved decide what to record, copy what the write will destroy
    # and a rule will need, or refuse the write with nothing written
    if _is_write(name, kwargs):
        return _prepare_write(name, args, kwargs)
    return None


def _after(token, name, args, kwargs, result):
    if token is not None:
        for tape, prep in token:
            tape._record_write(prep, result)
        return
    if name == "setitem" or name.startswith(_INPLACE_PREFIX) or \
            (kwargs and kwargs.get("out") is not None):
        return   # a write no tape follows
    _hook(name, args, kwargs, result)


def _prepare_write(name, args, kwargs):
    preps = []
    for tape in _recording_tapes():
        p = tape._prepare_write(name, args, kwargs)
        if p is not None:
            preps.append((tape, p))
    if not preps:
        return None
    # the old values some rule will read: copied once, recorded as copies on every tape that
    # follows them (so a gradient of the gradient flows through the copy)
    snaps = {}
    for tape, p in preps:
        for a in p.need_snap:
            if id(a) not in snaps:
                snaps[id(a)] = _inp.snapshot(a)
    if snaps:
        for tape, p in preps:
            p.snaps = snaps
            for k, snap in snaps.items():
                a = p.arrays.get(k)
                if a is not None and tape._tracks(a):
                    tape._record_copy(a, snap)
    return preps


class _WritePrep:
    """What a tape decided before an in-place write: the kind of write, its target(s) and the
    values it will need afterwards."""
    __slots__ = ("kind", "name", "args", "kwargs", "targets", "value", "bound", "need_snap",
                 "snaps", "arrays", "extra")

    def __init__(self, kind, name, args, kwargs, targets):
        self.kind = kind
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.targets = targets
        self.value = None
        self.bound = None
        self.need_snap = ()
        self.snaps = {}
        self.arrays = {}
        self.extra = None


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
    __slots__ = ("name", "args", "kwargs", "result", "outputs", "inputs", "versions", "rule",
                 "loose", "inplace")

    def __init__(self, name, args, kwargs, result, outputs, inputs, versions, rule, loose=(),
                 inplace=False):
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.result = result
        self.outputs = outputs      # arrays produced (their ids carry cotangents)
        self.inputs = inputs        # [(position or keyword, index in a list or None, array)]
        self.versions = versions    # [(array, version)]: values the rule reads
        self.rule = rule
        self.loose = loose          # [(array, version)]: outputs the rule does not read
        self.inplace = inplace      # outputs are new versions of objects recorded before


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
        self._clear_writes()

    def _clear_writes(self):
        self._wroots = {}           # id(root) -> root: memory that received a recorded write
        self._wlog = {}             # id(root) -> versions its recorded writes produced
        self._alias_index = {}      # id(root) -> tracked arrays in that memory (see _sync_aliases)
        self._alias_seen = 0
        self._pos_cache = {}        # id(array) -> (its backend, positions, lowest, highest)
        self._custom_index = {}     # id(root) -> [(custom node, backend array its backward keeps)]
        self._custom_seen = 0

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
        self._clear_writes()

    # ------------------------------------------------------------------ watching
    def watch(self, tensor):
        """Track ``tensor`` (a tnp array, a Variable, or a nested structure of them)."""
        for t in flatten(tensor):
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
        if self._wroots:
            self._bring_in_args(args, kwargs)
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
        if kwargs:
            for k, v in kwargs.items():
                if k != "out":
                    if isinstance(v, ndarray):
                        if self._is_watched(v):
                            inputs.append((k, None, v))
                    elif type(v) is list or type(v) is tuple:
                        self._scan(v, (), k, inputs)
        if not inputs:
            return
        if isinstance(result, ndarray):  # the common case: one array out
            outputs = [result] if all(result is not x for _, _, x in inputs) else []
        else:
            outputs = [o for o in _arrays_in(result) if all(o is not x for _, _, x in inputs)]
        if not outputs:
            return
        rule = _registry.VJPS.get(name)
        if rule is None and (name in _registry.NONDIFF or name in _registry.NO_ARRAY_OUTPUT):
            return  # the result carries no gradient: it is not watched
        # (backend array, its buffer's write count) of the values the rules read: checked
        # before the rule uses them. The outputs a rule does not read are kept apart: a write
        # into them that the tape recorded is fine, one it did not record is not.
        if name in _READS:
            key = (name, tuple([p for p, _, _ in inputs]))
            saved = _saved_cache.get(key, False)
            if saved is False:
                saved = _saved_cache[key] = _inp.saved_positions(name, key[1])
        else:
            saved = None
        versions = _versions_of(args, saved)
        if kwargs:
            # arrays passed by keyword (a ``where=`` mask) count as read
            for k, v in kwargs.items():
                if k != "out" and (isinstance(v, ndarray) or type(v) is _np.ndarray):
                    b = _backend(v) if isinstance(v, ndarray) else v
                    versions.append((b, version_of(b)))
        loose = ()
        if saved is None:
            for o in outputs:
                b = _backend(o)
                versions.append((b, version_of(b)))
        else:
            loose = []
            for o in outputs:
                b = _backend(o)
                loose.append((b, version_of(b)))
        for o in outputs:
            watched[id(o)] = o
        self._nodes.append(_Node(name, args, kwargs, result, outputs, inputs, versions, rule, loose))

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
        if self._wroots:
            self._bring_in_args(args)
        inputs = [(i, None, a) for i, a in enumerate(args)
                  if (isinstance(a, ndarray) or type(a) is _np.ndarray) and self._is_watched(a)]
        if not inputs:
            return
        outputs = _arrays_in(result)
        # a hand-written backward reads whatever its closure holds: the inputs and outputs it
        # keeps are saved values. Which they are is looked up only when a recorded write comes
        # (_guard_custom), so recording one costs nothing more.
        self._nodes.append(_Node("custom_gradient", args, {}, result, outputs, inputs, [], rule))
        for o in outputs:
            self._watched[id(o)] = o

    # ------------------------------------------------------------------ in-place writes
    def _tracks(self, a):
        return (isinstance(a, ndarray) or type(a) is _np.ndarray) and \
            (id(a) in self._watched or self._is_watched(a))

    def _prepare_write(self, name, args, kwargs):
        """Before an in-place write: None if it involves nothing this tape follows, else a
        :class:`_WritePrep` (raises, with nothing written, for a write it cannot record)."""
        if name == "setitem" or name in _inp.COPY_WRITES:
            b = _inp.bind_copy_write(name, args, kwargs)
            if b is None:
                return None
            target, value, bound = b
            kind, values = "copy", [value]
        elif name in _inp.AT_WRITES:
            kind, target, values = "at", args[0] if args else None, list(args[1:])
        elif name in ("inplace_sort", "inplace_partition"):
            kind, target, values = "perm", args[0], []
        elif name.startswith(_INPLACE_PREFIX) and name[len(_INPLACE_PREFIX):] in _inp.ARITH:
            kind, target, values = "arith", args[0], list(args[1:2])
        elif name.startswith(_INPLACE_PREFIX):
            kind, target, values = "other", args[0] if args else None, list(args[1:])
        else:
            kind, target = "out", None
            values = list(args) + [v for k, v in kwargs.items() if k != "out"]
        if kind == "out":
            targets = [o for o in flatten(kwargs["out"]) if _is_arraylike(o)]
        else:
            targets = [target] if _is_arraylike(target) else []
        if not targets:
            return None
        flat_values = [v for v in flatten(values) if _is_arraylike(v)]
        involved = any(self._tracks(t) for t in targets) or \
            any(self._tracks(v) for v in flat_values)
        if not involved and self._nodes:
            # an untracked array whose memory a tracked array shares
            self._sync_aliases()
            involved = any(self._alias_index.get(id(_root_of_array(t))) for t in targets
                           if isinstance(t, ndarray)) or \
                any(self._wroots and id(_root_of_array(v)) in self._wroots for v in flat_values
                    if isinstance(v, ndarray))
        if not involved:
            return None
        t0 = targets[0]
        if kind == "other" or (kind == "at" and len(args) < 3):
            raise RuntimeError(
                f"GradientTape: {_write_label(name)} into an array of shape {tuple(t0.shape)} "
                f"involves an array the tape is tracking, and its gradient is not defined "
                f"in tnp_train; compute a new array instead (tnp.where, x + y, untake)")
        if kind == "out" and kwargs.get("where", True) is not True:
            raise RuntimeError(
                f"GradientTape: tnp.{name}(..., out=, where=) into an array of shape "
                f"{tuple(t0.shape)} involves an array the tape is tracking; write "
                f"out[...] = tnp.where(where, tnp.{name}(...), out) instead")
        if kind == "copy" and not isinstance(value, ndarray) and \
                any(self._tracks(v) for v in flat_values):
            raise RuntimeError(
                f"GradientTape: {_write_label(name)} of a list holding tracked arrays into an "
                f"array of shape {tuple(t0.shape)}; pass one array (tnp.stack(...)) instead")
        self._guard_custom(targets)
        p = _WritePrep(kind, name, args, kwargs, targets)
        if kind == "copy":
            p.value, p.bound = value, bound
        elif kind == "perm":
            p.extra = _permutation(name, args, kwargs)
        elif kind in ("arith", "out"):
            p.need_snap = self._snapshots_needed(kind, name, args, kwargs, targets)
            for x in p.need_snap:
                p.arrays[id(x)] = x
        return p

    def _guard_custom(self, targets):
        """Before a recorded write: the hand-written backwards (``custom_gradient`` nodes) that
        keep an input or output in the memory written get its version now, so gradient()
        raises if the write changed what they will read."""
        nodes = self._nodes
        index = self._custom_index
        for i in range(self._custom_seen, len(nodes)):
            node = nodes[i]
            if node.name == "custom_gradient":
                for b in _closure_versions(getattr(node.rule, "grad_fn", None), node.args,
                                           node.outputs):
                    index.setdefault(id(_inp.root_of(b[0])), []).append((node, b[0]))
        self._custom_seen = len(nodes)
        if not index:
            return
        for t in targets:
            for node, b in index.get(id(_root_of_array(t)), ()):
                if all(a is not b for a, _ in node.versions):
                    node.versions.append((b, version_of(b)))

    def _snapshots_needed(self, kind, name, args, kwargs, targets):
        """The arguments whose old values the rule will read and the write destroys (the
        target itself, or an argument sharing its memory)."""
        op = name[len(_INPLACE_PREFIX):] if kind == "arith" else name
        tracked = [i for i, a in enumerate(args) if self._tracks(a)]
        saved = _inp.saved_positions(op, tracked)
        roots = {id(_root_of_array(t)) for t in targets}
        need = []
        for i, a in enumerate(args):
            if isinstance(a, ndarray) and (saved is None or i in saved) and \
                    not isinstance(_backend(a), _np.generic) and id(_root_of_array(a)) in roots:
                need.append(a)
        return need

    def _record_copy(self, a, snap):
        """``snap`` (a copy of ``a`` made before a write) is recorded as ``tnp.copy(a)``."""
        self._nodes.append(_Node("copy", (a,), {}, snap, [snap], [(0, None, a)], [],
                                 _registry.VJPS.get("copy")))
        self._watched[id(snap)] = snap

    def _record_write(self, p, result):
        """After an in-place write: its node, and the nodes of the arrays sharing its memory."""
        targets = p.targets
        if self._wroots or self._nodes:
            for t in targets:
                if isinstance(t, ndarray) and not self._tracks(t):
                    self._bring_in(t)
            if self._wroots:
                self._bring_in_args([v for v in flatten(list(p.args)) if isinstance(v, ndarray)
                                     and all(v is not t for t in targets)])
        kind, name = p.kind, p.name
        watched = self._watched
        versions, loose = [], []
        written = None                       # host bool mask of the elements written (None: all)
        t = targets[0]
        if kind == "copy":
            value = p.value
            written, src = _inp.copy_write(name, t, value, p.bound)
            vt = isinstance(value, (ndarray, _np.ndarray)) and self._tracks(value)
            inputs = [(0, None, t)] if self._tracks(t) else []
            if vt:
                inputs.append((1, None, value))
            rule = _inp.copy_rule(name, written, src, 0, 1 if vt else None,
                                  tuple(value.shape) if vt else ())
            node_args = (t, value)
        elif kind == "at":
            a_, key, bval = p.args[0], p.args[1], p.args[2]
            hkey = _inp._host(key)
            inputs = [(0, None, a_)] if self._tracks(a_) else []
            if self._tracks(bval):
                inputs.append((2, None, bval))
            rule = _inp.at_rule(name, _inp.AT_WRITES[name], hkey)
            node_args = p.args
            written = _np.zeros(tuple(t.shape), dtype=bool)
            written[hkey] = True
        elif kind == "perm":
            inputs = [(0, None, t)] if self._tracks(t) else []
            rule = _inp.perm_rule(name, p.extra, tuple(t.shape))
            node_args = (t,)
        else:  # arithmetic operators and out=
            snaps = p.snaps
            op = name[len(_INPLACE_PREFIX):] if kind == "arith" else name
            args = p.args
            kwargs = {k: v for k, v in p.kwargs.items() if k != "out"} if kind == "out" else {}
            inputs = []
            for i, a in enumerate(args):
                ta = type(a)
                if ta is list or ta is tuple:
                    self._scan(a, (), i, inputs)
                elif (isinstance(a, ndarray) or ta is _np.ndarray) and self._tracks(a):
                    inputs.append((i, None, a))
            for k, v in kwargs.items():
                if isinstance(v, ndarray) and self._tracks(v):
                    inputs.append((k, None, v))
            node_args = tuple(snaps.get(id(a), a) if isinstance(a, ndarray) else a for a in args)
            rule = _registry.VJPS.get(op)
            if rule is None and (op in _registry.NONDIFF or op in _registry.NO_ARRAY_OUTPUT):
                rule, inputs = _inp.CutRule(op), []
            elif rule is None:
                rule = _MissingRule(_write_label(name))
            saved = _inp.saved_positions(op, [q for q, _, _ in inputs]) if op in _inp.READS \
                else None
            versions = _versions_of(node_args, saved, skip=snaps)
            if saved is None:
                for o in targets:
                    b = _backend(o) if isinstance(o, ndarray) else o
                    versions.append((b, version_of(b)))
            name = op if kind == "out" else name
            p.kwargs = kwargs
        if not _inexact(t.dtype) and inputs:
            # an integer or boolean array carries no gradient (TF's rule): the values written
            # into it, and the rest of it, are constants from now on
            rule, inputs, versions = _inp.CutRule(name), [], []
        outputs = list(targets)
        if kind == "out":
            outputs += [o for o in _arrays_in(result) if all(o is not x for x in targets)]
        for o in outputs:
            b = _backend(o) if isinstance(o, ndarray) else o
            loose.append((b, version_of(b)))
            watched[id(o)] = o
        node_result = result if kind == "out" else t
        self._nodes.append(_Node(name, node_args, p.kwargs if kind in ("arith", "out") else {},
                                 node_result, outputs, inputs, versions, rule, loose, True))
        for o in targets:
            if isinstance(o, ndarray):
                b = _backend(o)
                r = _inp.root_of(b)
                self._wroots[id(r)] = r
                # what was written, for the checks at gradient(): positions come later, and
                # only if a check needs them
                self._wlog.setdefault(id(r), {})[version_of(b)] = (b, written)
                self._propagate(o, written)

    # ------------------------------------------------------------------ views
    def _sync_aliases(self):
        """Index the tracked arrays by the array owning their memory (only for tapes that see
        in-place writes: the index is brought up to date here, never on the recording path)."""
        w = self._watched
        n = len(w)
        if n == self._alias_seen:
            return
        index = self._alias_index
        for a in itertools.islice(w.values(), self._alias_seen, None):
            b = a if type(a) is _np.ndarray else _backend(a)
            if isinstance(b, _np.generic):
                continue
            index.setdefault(id(_inp.root_of(b)), []).append(a)
        self._alias_seen = n

    def _aliases_of(self, x):
        self._sync_aliases()
        return self._alias_index.get(id(_root_of_array(x)), ())

    def _propagate(self, t, written):
        """A write into ``t`` (its elements where ``written``, or all) changed every tracked
        array sharing those elements: each gets a new version taking them from ``t``."""
        aliases = [a for a in self._aliases_of(t) if a is not t and isinstance(a, ndarray)]
        if not aliases:
            return
        pos_t, _, _ = self._positions(t)
        flat = _np.arange(pos_t.size, dtype=_np.intp).reshape(pos_t.shape)
        if written is not None:
            pos_s, flat = pos_t[written], flat[written]
        else:
            pos_s = pos_t
        if pos_s.size == 0:
            return
        lo, hi = int(pos_s.min()), int(pos_s.max())
        for a in aliases:
            pos_a, alo, ahi = self._positions(a)
            if ahi < lo or alo > hi:
                continue                     # no element in the written range: unchanged
            src = _inp.source_index(pos_a, pos_s)
            mask = src >= 0
            if not mask.any():
                continue
            src = _np.where(mask, flat.reshape(-1)[_np.maximum(src, 0)], -1)
            self._record_merge(a, t, mask, src)

    def _positions(self, a):
        """(offsets of ``a``'s elements in their memory, lowest, highest), cached per array."""
        b = _backend(a)
        c = self._pos_cache.get(id(a))
        if c is None or c[0] is not b:
            pos = _inp.positions(a)
            lo, hi = (int(pos.min()), int(pos.max())) if pos.size else (0, -1)
            c = self._pos_cache[id(a)] = (b, pos, lo, hi)
        return c[1], c[2], c[3]

    def _record_merge(self, a, s, mask, src):
        inputs = [(0, None, a)] if self._tracks(a) else []
        if self._tracks(s):
            inputs.append((1, None, s))
        rule = _inp.merge_rule(mask, src, tuple(s.shape))
        b = _backend(a)
        self._nodes.append(_Node("setitem (through a view)", (a, s), {}, a, [a], inputs, [], rule,
                                 [(b, version_of(b))], True))
        self._watched[id(a)] = a

    def _bring_in(self, u):
        """Untracked ``u`` shares memory with tracked arrays (a view made before a write gave
        that memory a tracked value): it becomes tracked, its elements taken from them. A
        detached alias (``tt.stop_gradient(x)``, the same backend array) stays untracked."""
        aliases = self._aliases_of(u)
        if not aliases:
            return
        bu = _backend(u)
        if isinstance(bu, _np.generic) or any(
                isinstance(a, ndarray) and _backend(a) is bu for a in aliases):
            return
        pos_u, ulo, uhi = self._positions(u)
        for a in list(aliases):
            if not isinstance(a, ndarray):
                continue
            pos_a, alo, ahi = self._positions(a)
            if ahi < ulo or alo > uhi:
                continue
            src = _inp.source_index(pos_u, pos_a)
            mask = src >= 0
            if mask.any():
                self._record_merge(u, a, mask, src)

    def _bring_in_args(self, args, kwargs=None):
        wroots = self._wroots
        found = flatten(list(args) + (list(kwargs.values()) if kwargs else []))
        for a in found:
            if isinstance(a, ndarray) and id(a) not in self._watched:
                b = _backend(a)
                if not isinstance(b, _np.generic) and id(_inp.root_of(b)) in wroots:
                    self._bring_in(a)

    # ------------------------------------------------------------------ gradients
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none",
                 gradient_ready=None, gradient_destination=None):
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

        ``gradient_destination`` (with ``gradient_ready``): ``fn(source)`` returns a backend
        array shaped and typed like ``source`` (or None) that may receive its gradient. It is
        asked for a source that exactly one recorded operation reads, just before that
        operation's backward runs; a hand-written backward that can write its result in place
        (``dense``) writes it there (see :func:`gradient_destination`), and ``gradient_ready``
        then receives that very array, so a strategy's bucket needs no copy. Only for callers
        that consume the gradients at once (``minimize``): the array belongs to ``fn``'s owner
        and is overwritten by its next step.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: unconnected_gradients must be 'none' or "
                             f"'zero', got {unconnected_gradients!r}")
        self._check_usable("gradient")
        targets = flatten(target)
        if output_gradients is None:
            ogs = [None] * len(targets)
        else:
            ogs = flatten(output_gradients)
            if len(ogs) != len(targets):
                raise ValueError(f"GradientTape.gradient: {len(ogs)} output_gradients for "
                                 f"{len(targets)} targets")
        flat_sources = flatten(sources)
        for s in flat_sources:
            if not _is_arraylike(s):
                raise ValueError(f"GradientTape.gradient: sources must be arrays or Variables, "
                                 f"got {type(s).__name__}")
        for what, fn in (("gradient_ready", gradient_ready),
                         ("gradient_destination", gradient_destination)):
            if fn is not None and not callable(fn):
                raise TypeError(f"GradientTape.gradient: {what} must be callable, got "
                                f"{type(fn).__name__}")
        if not self._persistent:
            # a one-shot tape stops following arrays now: with no other tape about, the
            # backward pass then runs without the recording hook at all
            self._stop_passive()
        ready = None
        if gradient_ready is not None:
            ready = _ReadyReporter(self, flat_sources, gradient_ready, unconnected_gradients,
                                   gradient_destination)
        if self._wroots:
            # a target that is an untracked view of memory written under the tape
            was = self._recording
            self._recording = True
            try:
                self._bring_in_args(targets)
            finally:
                self._recording = was
        with (_tracing or _load_tracing()).span("GradientTape.gradient", "backward"):
            grads = self._backward(targets, ogs, ready)
            if not self._persistent:
                self._used = True
                self._release()
            if ready is not None:
                out = [ready.final(s, grads) for s in flat_sources]
            else:
                out = [self._source_grad(s, grads, unconnected_gradients) for s in flat_sources]
        return pack_sequence_as(sources, out)

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
        self._clear_writes()
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
                og = wrap(_ext.array_module(dev).ones(t.shape, dtype=t.dtype), dev)
            _accumulate(grads, t, og)
        was, was_passive = self._recording, self._passive
        self._recording = self._passive = False  # the backward pass: enclosing tapes only
        tracing = _tracing or _load_tracing()
        # profiling: a span per hand-written backward at level 2, per VJP rule at level 3
        traced = 3 if tracing.level(3) else 2 if tracing.level(2) else 0
        apply = self._apply if not traced else \
            lambda node, gs, grads: self._apply_traced(node, gs, grads, traced, tracing)
        direct = ready.direct if ready is not None else None
        try:
            if ready is not None:
                ready.start(grads)
            nodes = self._nodes
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
                        apply(node, gs, grads)
                elif len(outs) == 1:
                    g = grads.get(id(outs[0]))
                    if g is not None:
                        apply(node, [g], grads)
                else:
                    gs = [grads.get(id(o)) for o in outs]
                    if not all(g is None for g in gs):
                        apply(node, gs, grads)
                if offered:
                    _local.destinations = None
                if ready is not None and i in ready.pending:
                    ready.report(i, grads)
        finally:
            if direct is not None:
                _local.destinations = None
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

    def _recorded_writes(self, arr, v, cur):
        """Whether every write into ``arr``'s memory from version ``v`` to ``cur`` was recorded."""
        log = self._wlog.get(id(_inp.root_of(arr)))
        return log is not None and cur > v and all(u in log for u in range(v + 1, cur + 1))

    def _untouched(self, arr, v, cur):
        """Whether every write into ``arr``'s memory from version ``v`` to ``cur`` was recorded
        and wrote none of ``arr``'s elements (a saved row of a matrix whose other rows were
        written afterwards is still what the rule needs: PyTorch, with one counter per
        storage, refuses that too)."""
        if not self._recorded_writes(arr, v, cur):
            return False
        log = self._wlog[id(_inp.root_of(arr))]
        try:
            pos_a = _inp.backend_positions(arr)
            for u in range(v + 1, cur + 1):
                b, written = log[u]
                pos_w = _inp.backend_positions(b)
                if written is not None:
                    pos_w = pos_w[written]
                if pos_w.size and (_inp.source_index(pos_a, pos_w) >= 0).any():
                    return False
        except RuntimeError:   # a view of another dtype: cannot tell, so it was touched
            return False
        return True

    def _apply(self, node, gs, grads):
        for arr, v in node.versions:
            if version_of(arr) != v and not self._untouched(arr, v, version_of(arr)):
                raise RuntimeError(
                    f"GradientTape: an array that the gradient of {_op_label(node)} needs "
                    f"(shape {tuple(arr.shape)}, dtype {arr.dtype}) was modified in place after "
                    f"it was recorded (its version went from {v} to {version_of(arr)}); its "
                    f"gradient would be wrong. Copy it before modifying it (y = y.copy()), or "
                    f"compute a new array instead of writing into it.")
        for arr, v in node.loose:
            cur = version_of(arr)
            if cur != v and not self._recorded_writes(arr, v, cur):
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
            _accumulate(grads, x, gx)

    # ------------------------------------------------------------------ jacobians
    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """d(target[i...])/d(source[j...]) of shape ``target.shape + source.shape`` for each
        source; mirrors ``tf.GradientTape.jacobian``."""
        self._check_usable("jacobian")
        flat_sources = flatten(sources)
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
        return pack_sequence_as(sources, out)

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
    reads it, since only nodes recorded after an array was made or watched can contribute.

    With ``dest_fn``, a source read by exactly one recorded node (once) and written by none
    gets its whole gradient from that node: ``direct`` lists those nodes, and
    :meth:`destinations` asks ``dest_fn`` where each such gradient may be written."""

    __slots__ = ("tape", "fn", "unconnected", "pending", "done", "direct", "dest_fn")

    def __init__(self, tape, sources, fn, unconnected, dest_fn=None):
        self.tape = tape
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
        for i, node in enumerate(tape._nodes):
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
            g = self.tape._source_grad(s, grads, self.unconnected)
            self.done[id(s)] = g
            self.fn(s, g)

    def final(self, s, grads):
        k = id(s)
        if k in self.done:
            return self.done[k]
        return self.tape._source_grad(s, grads, self.unconnected)


# ---------------------------------------------------------------------------- helpers
def _versions_of(args, saved, skip=None):
    """(backend array, version) of the arrays among ``args`` (positions in ``saved``, or all
    when it is None), lists and tuples included; ``skip``: ids of arrays left out."""
    versions = []
    for i, a in enumerate(args):
        if saved is not None and i not in saved:
            continue
        if isinstance(a, ndarray):
            if skip and id(a) in skip:
                continue
            b = _backend(a)
            versions.append((b, version_of(b)))
        elif type(a) is _np.ndarray:
            versions.append((a, version_of(a)))
        elif type(a) is list or type(a) is tuple:
            for e in flatten(a):
                if isinstance(e, ndarray):
                    b = _backend(e)
                    versions.append((b, version_of(b)))
                elif type(e) is _np.ndarray:
                    versions.append((e, version_of(e)))
    return versions


def _root_of_array(x):
    b = x if type(x) is _np.ndarray else _backend(x)
    return b if isinstance(b, _np.generic) else _inp.root_of(b)


_FunctionType = _types.FunctionType


def _closure_arrays(fn):
    """The backend arrays a function's closure holds: in its cells, in tuples and lists there
    (one level), and in the closures of the functions it holds (three levels: the first is
    :func:`hand_written_backward`'s). One pass, no recursion: this runs for every hand-written
    op recorded."""
    held = []
    todo = [fn]
    for _ in range(4):
        nxt = []
        for f in todo:
            for c in f.__closure__ or ():
                try:
                    v = c.cell_contents
                except ValueError:      # an empty cell
                    continue
                t = type(v)
                if t is _np.ndarray:
                    held.append(v)
                elif t is _FunctionType:
                    nxt.append(v)
                elif isinstance(v, ndarray):
                    held.append(_backend(v))
                elif t is tuple or t is list:
                    for e in v:
                        te = type(e)
                        if te is _np.ndarray:
                            held.append(e)
                        elif isinstance(e, ndarray):
                            held.append(_backend(e))
                        elif _GPU_ARRAY[0] is not None and te is _GPU_ARRAY[0]:
                            held.append(e)
                elif _GPU_ARRAY[0] is not None and t is _GPU_ARRAY[0]:
                    held.append(v)
        if not nxt:
            break
        todo = nxt
    return held


_GPU_ARRAY = [None]     # cupy.ndarray, once CuPy is imported


def _closure_versions(fn, args, outputs):
    """Versions of the arrays a hand-written backward keeps that share memory with the
    operation's inputs or outputs (what an in-place write by the user could change)."""
    if fn is None or not getattr(fn, "__closure__", None):
        return []
    if _GPU_ARRAY[0] is None and _ext.cupy() is not None:
        _GPU_ARRAY[0] = _ext.cupy().ndarray
    held = _closure_arrays(fn)
    if not held:
        return []
    roots = set()
    for a in (*args, *outputs):
        if isinstance(a, ndarray):
            b = _backend(a)
        elif type(a) is _np.ndarray:
            b = a
        else:
            continue
        if type(b) is not _np.ndarray and isinstance(b, _np.generic):
            continue
        roots.add(id(b if b.base is None else _inp.root_of(b)))
    versions = []
    for b in held:
        # an array that owns its memory is its own root (most are: one check, no walk)
        if id(b if b.base is None else _inp.root_of(b)) in roots and \
                not isinstance(b, _np.generic):
            versions.append((b, version_of(b)))
    return versions


def _write_label(name):
    if name == "setitem":
        return "item assignment"
    if name.startswith(_INPLACE_PREFIX):
        n = name[len(_INPLACE_PREFIX):]
        if n in _inp.ARITH:
            return f"in-place {n} ({_OPERATOR_OF.get(n, n)}=)"
        return f"tnp.{n} (in place)" if "." in n or n in tnp.REGISTRY else f"ndarray.{n} (in place)"
    return f"tnp.{name}(..., out=)"


_OPERATOR_OF = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "**",
                "matmul": "@", "remainder": "%", "floor_divide": "//"}


def _op_label(node):
    n = node.name
    if node.inplace and (n == "setitem" or n.startswith(_INPLACE_PREFIX)):
        return _write_label(n)
    return f"tnp.{n}" if n not in ("custom_gradient",) and " " not in n else n


def _permutation(name, args, kwargs):
    """For ``x.sort()``/``x.partition(kth)`` in place: the flat index in the old value of every
    element of the new one (computed from the old value, before the write)."""
    from .vjps.indexing import index_map, host

    x = args[0]
    old = _np.asarray(host(x))
    axis = kwargs.get("axis", -1)
    if name == "inplace_sort":
        perm = _np.argsort(old, axis=axis, kind="stable")
    else:
        perm = _np.argpartition(old, host(args[1]), axis=axis)
    return _np.take_along_axis(index_map(old.shape), perm, axis=axis)


class _MissingRule:
    """The rule of a recorded write whose operation has no VJP: raises if a gradient needs it."""
    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label

    def for_position(self, i):
        label = self.label

        def outer(ans, *args, **kwargs):
            raise LookupError(f"No gradient defined for {label} (it was recorded because an "
                              f"input is tracked); see tnp_train.autodiff.registry")
        return outer

    def for_keyword(self, name):
        return self.for_position(0)


def _device_of(x):
    return _dev_of(x) if isinstance(x, ndarray) else _CPU


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
    if g.dtype != xd and _inexact(xd):
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


def hand_written_backward(opname, grad_fn, inputs, recorded=None):
    """The one policy for a hand-written backward: ``grad_fn(*dys)`` of a ``custom_gradient``
    op (NumPy/CuPy on backend arrays) that reads the tnp arrays ``inputs``.

    First order -- no tape recording now follows a cotangent or one of ``inputs`` -- runs
    ``grad_fn``, at no extra cost. When one does, the backward is itself being differentiated
    (a gradient of a gradient): ``recorded(*dys)``, the same cotangents written with recorded
    tnp operations, runs instead where the op has one; without one, ``grad_fn``'s results are
    recorded on that tape with a rule that raises NotImplementedError naming ``opname`` if a
    gradient ever flows back through them. A second-order term is never silently missing."""
    def backward(*dys):
        if not recording():
            return grad_fn(*dys)
        followed = [a for a in (*dys, *inputs) if isinstance(a, ndarray)]
        if not any(needs_gradient(followed)):
            return grad_fn(*dys)
        if recorded is not None:
            return recorded(*dys)
        res = grad_fn(*dys)
        outs = tuple(r for r in (res if isinstance(res, (tuple, list)) else (res,))
                     if isinstance(r, ndarray))
        if outs:
            record_custom(tuple(followed), outs, _RefusingRule(opname))
        return res
    # a trace names the backward after the function it runs (_rule_label)
    backward.__module__, backward.__qualname__ = grad_fn.__module__, grad_fn.__qualname__
    return backward


def gradient_destination(x):
    """Inside a hand-written backward: the backend array that the final gradient of input
    ``x`` (the very object the operation was recorded with) may be written into, or None.
    Set only while the tape runs the backward of the one operation that makes all of ``x``'s
    gradient (see ``GradientTape.gradient(gradient_destination=)``); a backward that uses it
    writes exactly the values it would have returned, and returns that array."""
    dests = getattr(_local, "destinations", None)
    return dests.get(id(x)) if dests else None


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
