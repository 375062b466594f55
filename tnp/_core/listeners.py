"""Operation listeners: any number of observers of the tnp operations a program runs.

The tape records, the profiler times, a tracer builds a graph: each is a listener added with
:func:`add_op_listener`. With none installed, every operation pays one check of the module
global ``_HOOK`` (``None``); with one or more installed, ``_HOOK`` is :func:`_report`, which each
operation calls first, before computing anything:

    if _HOOK is not None:
        r = _HOOK(name, args, kwargs, fn)       # fn: the operation itself
        if r is not PASS:
            return r
    ... the operation's own body ...

``_report`` calls every listener's ``before``, runs ``fn`` again (that second call finds the
thread marked as inside a report, gets ``PASS`` back and runs the body), then every ``after``.
The same mark keeps nested work quiet: the tnp operations a listener runs, and those an
operation's implementation runs, are not reported. The mark is per thread, so operations in
other threads are reported while a listener runs.
"""
from __future__ import annotations

import threading

from . import state as _state

__all__ = ["add_op_listener", "OpListenerHandle", "op_listeners", "reporting_suspended", "PASS"]


class _Pass:
    __slots__ = ()

    def __repr__(self):
        return "tnp.extend.PASS"


PASS = _Pass()   # returned by the hook when the operation should just run its body

_entries: tuple = ()        # (handle, before, after, error), in registration order
# the entries that must see every operation (all but the observers): while one exists, a
# compiled function runs eagerly so that its operations are reported
_blocking: tuple = ()
_lock = threading.Lock()


class _Local(threading.local):
    inside = False          # per thread: an operation is being reported (or reporting is off)


_local = _Local()


class OpListenerHandle:
    """What :func:`add_op_listener` returns: ``remove()`` it (or use it as a context manager)."""

    __slots__ = ("before", "after", "error", "observer", "_removed", "__weakref__")

    def __init__(self, before, after, error, observer=False):
        self.before = before
        self.after = after
        self.error = error
        self.observer = observer
        self._removed = False

    @property
    def active(self):
        return not self._removed

    def remove(self):
        """Stop listening; idempotent and thread-safe. An operation already being reported in
        another thread may still call this listener's ``after`` once."""
        global _entries, _blocking
        with _lock:
            if self._removed:
                return
            self._removed = True
            _entries = tuple(e for e in _entries if e[0] is not self)
            _blocking = tuple(e for e in _blocking if e[0] is not self)
            _state.set_recording_hook(_report if _entries else None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        return f"<OpListenerHandle {'active' if not self._removed else 'removed'}>"


def add_op_listener(before=None, after=None, error=None, observer=False):
    """Listen to every tnp operation; returns an :class:`OpListenerHandle`.

    ``before(name, args, kwargs) -> token`` runs before the operation computes (so a listener can
    time it, or refuse it by raising: the operation then does not run). ``after(token, name,
    args, kwargs, result)`` runs after it returned ``result``; ``error(token, name, args, kwargs,
    exc)`` runs if it raised ``exc`` (which then propagates). ``token`` is what this listener's
    ``before`` returned (``None`` without one). ``name`` is the registry name (``'add'``,
    ``'linalg.inv'``, ``'getitem'``); ``args`` and ``kwargs`` are the arguments as the caller
    passed them (tnp arrays, not backend arrays).

    In-place writes are reported before they happen, under names that say what they write:
    ``'setitem'`` (``x[key] = v`` and ``x.fill(v)``, as ``(x, key, v)``), ``'inplace_add'``
    (``x += y``; one per operator, named after its ufunc), ``'inplace_copyto'``,
    ``'inplace_put'`` (``tnp.put`` and ``x.put``), ``'inplace_place'``, ``'inplace_putmask'``,
    ``'inplace_put_along_axis'``, ``'inplace_fill_diagonal'``, ``'inplace_add.at'``
    (``ufunc.at``), ``'inplace_sort'`` and ``'inplace_partition'`` (``x.sort(axis=...)``,
    ``x.partition(kth, axis=...)``), ``'inplace_random.shuffle'``; any other operation with
    ``out=`` in ``kwargs`` (an output given positionally is reported as ``out=``) writes into
    it. A listener that follows writes (the tape does) reads the old values in ``before``.

    Listeners are called in registration order, ``after``/``error`` included. Adding and
    removing are thread-safe. tnp operations run inside any callback are not reported.

    A compiled function (``tnp.jit``) runs eagerly while a listener is installed, so that the
    listener sees its operations; ``observer=True`` is a listener that only watches (a
    profiler): compiled functions keep running compiled while it listens, and their operations
    are not reported to it (their replay can be timed instead: ``set_replay_observer``).
    """
    if before is None and after is None and error is None:
        raise TypeError("add_op_listener: give at least one of before, after, error")
    for what, f in (("before", before), ("after", after), ("error", error)):
        if f is not None and not callable(f):
            raise TypeError(f"add_op_listener: {what} must be callable, got {type(f).__name__}")
    global _entries, _blocking
    h = OpListenerHandle(before, after, error, bool(observer))
    with _lock:
        _entries = _entries + ((h, before, after, error),)
        if not observer:
            _blocking = _blocking + (_entries[-1],)
        _state.set_recording_hook(_report)
    return h


def op_listeners():
    """The active listeners' handles, in registration order."""
    return [e[0] for e in _entries]


class reporting_suspended:
    """``with reporting_suspended(): ...`` runs tnp operations in this thread without reporting
    them to any listener (what a listener's own work gets automatically)."""

    __slots__ = ("_was",)

    def __enter__(self):
        self._was = _local.inside
        _local.inside = True
        return self

    def __exit__(self, *exc):
        _local.inside = self._was
        return False


def _report(name, args, kwargs, fn, fargs=None, fkwargs=None):
    """The hook installed while listeners exist (see the module docstring). ``fargs``/
    ``fkwargs``: how to call ``fn`` when the reported arguments differ from its own
    (``x.reshape(2, 3)`` is reported as ``('reshape', (x, (2, 3)))``)."""
    loc = _local
    if loc.inside:
        return PASS
    entries = _entries
    loc.inside = True
    try:
        if len(entries) == 1:      # the common case (a tape alone): no token list
            _, before, after, error = entries[0]
            tok = before(name, args, kwargs) if before is not None else None
            try:
                r = fn(*(args if fargs is None else fargs),
                       **(kwargs if fkwargs is None else fkwargs))
            except BaseException as exc:
                if error is not None:
                    error(tok, name, args, kwargs, exc)
                raise
            if after is not None:
                after(tok, name, args, kwargs, r)
            return r
        tokens = []
        try:
            for e in entries:
                b = e[1]
                tokens.append(b(name, args, kwargs) if b is not None else None)
            r = fn(*(args if fargs is None else fargs), **(kwargs if fkwargs is None else fkwargs))
        except BaseException as exc:
            for e, tok in zip(entries, tokens):
                if e[3] is not None:
                    e[3](tok, name, args, kwargs, exc)
            raise
        for e, tok in zip(entries, tokens):
            if e[2] is not None:
                e[2](tok, name, args, kwargs, r)
        return r
    finally:
        loc.inside = False
