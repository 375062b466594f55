"""The profiler's spans inside compiled functions.

While a thread traces a ``tt.function`` (a compiled ``fit`` step), the overlay installed here is
the active recorder of :mod:`tnp_train.utils.tracing` on that thread: each span the traced code
opens (a layer's ``forward``, ``GradientTape.gradient`` and the hand-written backwards, an
optimizer's update, the loss) becomes two observations of the program
(``tnp.extend.observe``): a begin marker and an end marker of the span's level. The trace is
the same whether a profiler runs or not. At each replay, the markers of the levels the running
profiler records are called in program order (none without a profiler: that replay has no
markers at all); each reads the recorder at that moment, so its span goes to the session
recording now, timed at the replay. A fused kernel runs where its last operation was, so a span
whose operations were fused with a later span's counts that kernel's time in the later one.

:func:`call_recorded` is a compiled function's call while a profiler records: one ``function``
span per call, and the markers a failed replay left open are closed with it.
"""
from __future__ import annotations

import threading

from tnp import extend as _ext

from ..utils import tracing as _tracing

__all__ = ["tracing_spans", "call_recorded"]

_local = threading.local()        # .open: the spans the replays opened on this thread


def _open():
    try:
        return _local.open
    except AttributeError:
        stack = _local.open = []
        return stack


def _begin(name, cat, args):
    """A begin marker's replay: open span ``name`` in the recorder recording now."""
    rec = _tracing.active_recorder
    sp = _tracing.NO_SPAN if rec is None else rec.span(name, cat, None, args)
    sp.__enter__()
    _open().append(sp)


def _end():
    """An end marker's replay: close the span its begin marker opened."""
    stack = _open()
    if stack:
        stack.pop().__exit__(None, None, None)


class _MarkerSpan:
    """A span of traced code: its begin and end markers, recorded into the program."""

    __slots__ = ("name", "cat", "args", "level")

    def __init__(self, name, cat, args, level):
        self.name = name
        self.cat = cat
        self.args = dict(args) if args else {}
        self.level = level

    def __enter__(self):
        _ext.observe(_begin, self.name, self.cat, self.args, level=self.level)
        return self

    def __exit__(self, *exc):
        _ext.observe(_end, level=self.level)
        return False

    def cancel(self):
        """(Markers are in the program once recorded; nothing traced cancels a span.)"""


class _TraceOverlay:
    """The active recorder while some thread traces: spans of a tracing thread become markers;
    other threads' spans, and events that already happened, go to the session's recorder."""

    # the markers' levels: every instrumented span (level 2); the level-3 detail of a compiled
    # program is its nodes' and kernels' times, not the tnp operations traced into it
    level = 2
    closed = False

    def __init__(self):
        self.threads = {}          # thread id -> depth of nested traces

    def span(self, name, cat, start, args):
        if threading.get_ident() in self.threads:
            lvl = _tracing.level_of(cat)
            if lvl > self.level:
                return _tracing.NO_SPAN
            return _MarkerSpan(name, cat, args, lvl)
        rec = _tracing.get_recorder()
        return _tracing.NO_SPAN if rec is None else rec.span(name, cat, start, args)

    def traces_here(self):
        """Whether the calling thread is tracing (its operations are not run for real)."""
        return threading.get_ident() in self.threads

    def complete(self, name, cat, t_start, t_end, args):
        rec = _tracing.get_recorder()
        if rec is not None:
            rec.complete(name, cat, t_start, t_end, args)

    def instant(self, name, cat, args):
        rec = _tracing.get_recorder()
        if rec is not None:
            rec.instant(name, cat, args)


_OVERLAY = _TraceOverlay()
_lock = threading.Lock()


class tracing_spans:
    """``with tracing_spans(): ...`` around the traced call of a function: this thread's spans
    become markers of the program (nested traces share the overlay)."""

    __slots__ = ()

    def __enter__(self):
        me = threading.get_ident()
        with _lock:
            threads = _OVERLAY.threads
            threads[me] = threads.get(me, 0) + 1
            if len(threads) == 1 and threads[me] == 1:
                _tracing.set_trace_overlay(_OVERLAY)
        return self

    def __exit__(self, *exc):
        me = threading.get_ident()
        with _lock:
            threads = _OVERLAY.threads
            if threads[me] == 1:
                del threads[me]
            else:
                threads[me] -= 1
            if not threads:
                _tracing.set_trace_overlay(None)
        return False


def call_recorded(rec, name, run, jit):
    """``run()`` (a compiled function's call) as a ``function`` span ``name`` of recorder
    ``rec``; ``traced: True`` in its args when the call traced. Markers that a replay opened
    and did not close (it raised) are closed with it."""
    stack = _open()
    depth = len(stack)
    before = jit.trace_count
    sp = rec.span(name, "function", None, {})
    sp.__enter__()
    exc = (None, None, None)
    try:
        return run()
    except BaseException as e:
        exc = (type(e), e, e.__traceback__)
        raise
    finally:
        while len(stack) > depth:
            stack.pop().__exit__(*exc)
        if jit.trace_count != before and sp is not _tracing.NO_SPAN and \
                not isinstance(sp, _MarkerSpan):
            sp.args = {"traced": True}
        sp.__exit__(*exc)
