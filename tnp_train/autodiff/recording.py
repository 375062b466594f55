"""Recording: the operation listener, the stacks of tapes it serves, and what one tape records.

The tapes are an operation listener (``tnp.extend.add_op_listener``), installed while any tape
is active in any thread: its ``after`` sees every tnp operation (functions, operators,
methods, indexing) and gives it to each tape of the thread that records, whose
:meth:`Recorder._record` makes a :class:`.nodes.Node` when an input is watched. In-place
writes go to :mod:`.inplace` instead: the listener's ``before`` has it prepare them before
they happen (copy what a write destroys and a rule needs, or refuse a write it cannot record),
its ``after`` has it record them. Other listeners (a profiler, a tracer) coexist with it. Tapes are thread-local
(each thread has its own stack of active tapes, so replicas running in threads record
independently); the listener returns at once on a thread with no tape.

:meth:`Recorder._record` runs on every tnp operation while a tape records: it is written for
speed (plain attribute and global reads, no helper layers), and the in-place machinery costs
it one test of ``self._writes`` until a write the tape recorded went into memory it may read.
"""
from __future__ import annotations

import inspect
import threading
import weakref

import numpy as _np

import tnp
from tnp import extend as _ext
from tnp import ndarray
from tnp.extend import storage as _storage, version as version_of
from tnp.extend import is_inexact as _inexact   # the dtypes that carry gradients

from . import inplace as _inp
from . import registry as _registry
from .inplace import INPLACE_PREFIX as _INPLACE_PREFIX, READS as _READS, \
    record_write as _record_write
from .nodes import Node as _Node, arrays_in as _arrays_in, versions_of as _versions_of
from .variables import Variable

__all__ = ["Recorder", "paused", "recording", "needs_gradient", "record_custom",
           "recording_tapes", "thread_tapes", "activate", "deactivate", "follow_passively",
           "unfollow", "end_passive"]

# this thread's tapes: ``tapes``, the stack of those inside their ``with`` block; ``passive``,
# weak references to those following their arrays after the block (until a gradient)
_local = threading.local()
_active = [0]             # tapes active in all threads: the listener is installed while > 0
_active_lock = threading.Lock()
_listener = [None]        # its handle

_saved_cache: dict = {}     # (name, tracked positions) -> the positions whose values are read
_signatures: dict = {}      # name -> NumPy's signature (None: unknown), for _positional


# ---------------------------------------------------------------------------- the tapes of a thread
def thread_tapes():
    """This thread's stack of tapes inside their ``with`` block (made on first use)."""
    t = getattr(_local, "tapes", None)
    if t is None:
        t = _local.tapes = []
    return t


def recording_tapes():
    """The tapes that record an operation run now on this thread: those inside their block
    and recording, and those following their arrays after the block (until a gradient)."""
    out = [t for t in getattr(_local, "tapes", None) or () if t._recording]
    for ref in getattr(_local, "passive", None) or ():
        t = ref()
        if t is not None and t._passive and t not in out:
            out.append(t)
    return out


def activate():
    """One more active tape: the listener is installed with the first."""
    with _active_lock:
        _active[0] += 1
        if _active[0] == 1:
            _listener[0] = _ext.add_op_listener(before=_before, after=_after)


def deactivate():
    with _active_lock:
        _active[0] -= 1
        if _active[0] == 0:
            _listener[0].remove()
            _listener[0] = None


def follow_passively(rec):
    """After its block, ``rec`` follows the arrays it tracks until :func:`unfollow` ends it or
    it is freed: the reference kept is weak, so an unused tape does not outlive its owner."""
    ref = weakref.ref(rec, end_passive)
    if not hasattr(_local, "passive"):
        _local.passive = []
    _local.passive.append(ref)
    return ref


def unfollow(ref):
    """Stop a tape's following after its block (its active count goes with it)."""
    passive = getattr(_local, "passive", None)
    if passive is not None and ref in passive:
        passive.remove(ref)
        deactivate()


def end_passive(ref):
    """A tape that left its ``with`` block unused stops following its arrays."""
    passive = getattr(_local, "passive", None)
    if passive is not None and ref in passive:
        passive.remove(ref)
    deactivate()


class _PausedTapes:
    __slots__ = ("_tapes", "_followers")

    def __enter__(self):
        tapes = getattr(_local, "tapes", None) or ()
        held = self._tapes = [t for t in tapes if t._recording]
        for t in held:
            t._recording = False
        # and the tapes that follow their arrays after their block: a custom_gradient body
        # they recorded besides its custom node was differentiated twice (2x the gradient)
        followers = self._followers = []
        for ref in getattr(_local, "passive", None) or ():
            t = ref()
            if t is not None and t._passive:
                t._passive = False
                followers.append(ref)
        return self

    def __exit__(self, *exc):
        for t in self._tapes:
            t._recording = True
        passive = getattr(_local, "passive", None) or ()
        for ref in self._followers:
            t = ref()
            if t is not None and ref in passive:   # (not if it stopped following meanwhile)
                t._passive = True
        return False


def paused():
    """Context manager: nothing run inside is recorded by the tapes of this thread that are
    recording in their ``with`` block (``tape.stop_recording()`` for each of them at once), nor
    by those following their arrays after their block. On exit, exception or not, exactly those
    tapes record again; the tapes already paused stay paused, and blocks nest. Other threads'
    tapes are not affected."""
    return _PausedTapes()


def recording():
    """Whether an operation run now would be recorded by a tape of this thread (inside a
    ``custom_gradient`` backward: whether a higher-order gradient is being taken)."""
    tapes = getattr(_local, "tapes", None)
    if tapes and any(t._recording for t in tapes):
        return True
    return bool(getattr(_local, "passive", None)) and bool(recording_tapes())


def needs_gradient(arrays):
    """For each array, whether a recording tape on this thread tracks it (so a hand-written
    backward can skip the cotangents nobody asked for)."""
    tapes = recording_tapes()
    return [any(t._is_watched(a) for t in tapes) if a is not None else False for a in arrays]


def record_custom(args, result, rule):
    """Record a hand-differentiated operation on every tape that records now."""
    for tape in recording_tapes():
        tape._record_custom(args, result, rule)


# ---------------------------------------------------------------------------- the listener
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


def _prepare_write(name, args, kwargs):
    return _inp.prepare_writes(recording_tapes(), name, args, kwargs)


def _after(token, name, args, kwargs, result):
    if token is not None:
        for tape, prep in token:
            _record_write(tape, prep, result)
        return
    if name == "setitem" or name.startswith(_INPLACE_PREFIX) or \
            (kwargs and kwargs.get("out") is not None):
        return   # a write no tape follows
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


# ---------------------------------------------------------------------------- one tape's records
class Recorder:
    """What one tape has recorded: the arrays it watches (``_watched``: id -> array, kept alive
    so ids stay unique; the outputs of recorded operations join them) and its nodes in program
    order (``_nodes``). :mod:`.inplace` adds the nodes of writes to both, :mod:`.backward`
    reads them; ``_writes`` is the tape's :class:`.inplace.Writes`, None until a write
    concerns it.

    ``_recording`` is set while the tape records inside its block, ``_passive`` while it
    follows its arrays after the block; :class:`.tape.GradientTape` (a Recorder) sets both."""

    def __init__(self, watch_accessed_variables=True):
        self._watch_accessed = watch_accessed_variables
        self._watched = {}          # id -> array (kept alive so ids stay unique)
        self._watched_vars = []
        self._nodes = []
        self._recording = False
        self._passive = False       # following known arrays after the block, until gradient()
        self._writes = None

    # ------------------------------------------------------------------ watching
    def _watch_one(self, t):
        if id(t) not in self._watched:
            self._watched[id(t)] = t
            if isinstance(t, Variable):
                self._watched_vars.append(t)

    def _is_watched(self, x):
        if id(x) in self._watched:
            return True
        if self._recording and self._watch_accessed and isinstance(x, Variable) and x._trainable and \
                _inexact(x.dtype):
            self._watch_one(x)
            return True
        return False

    def _tracks(self, a):
        return (isinstance(a, ndarray) or type(a) is _np.ndarray) and \
            (id(a) in self._watched or self._is_watched(a))

    # ------------------------------------------------------------------ recording
    def _record(self, name, args, kwargs, result):
        if self._writes is not None and self._writes.roots:
            self._writes.bring_in_args(self, args, kwargs)
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
                    b = _storage(v) if isinstance(v, ndarray) else v
                    versions.append((b, version_of(b)))
        loose = ()
        if saved is None:
            for o in outputs:
                b = _storage(o)
                versions.append((b, version_of(b)))
        else:
            loose = []
            for o in outputs:
                b = _storage(o)
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
        if self._writes is not None and self._writes.roots:
            self._writes.bring_in_args(self, args)
        inputs = [(i, None, a) for i, a in enumerate(args)
                  if (isinstance(a, ndarray) or type(a) is _np.ndarray) and self._is_watched(a)]
        if not inputs:
            return
        outputs = _arrays_in(result)
        # a hand-written backward reads whatever its closure holds: the inputs and outputs it
        # keeps are saved values. Which they are is looked up only when a recorded write comes
        # (Writes.guard_custom), so recording one costs nothing more.
        self._nodes.append(_Node("custom_gradient", args, {}, result, outputs, inputs, [], rule))
        for o in outputs:
            self._watched[id(o)] = o


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
