"""The profiler's recording seam: what layers, the tape, optimizers, the input pipeline and the
trainers call to mark a span of time, and what costs nothing when no profiler runs.

``with span(name, cat, **args): ...`` records one complete event in the active recorder (a
``tnp_train.profiler`` recorder installed with :func:`set_recorder`); with none installed it
costs one read of the module global :data:`active_recorder` and returns a shared no-op object.
Times are ``time.perf_counter()`` seconds (:data:`clock`), the clock the collective layer's
events use; the recorder turns them into trace microseconds.

``cat`` says what a span is (docs/profiler.md lists them); its level is 1 for ``step``,
``trace`` and ``function`` (a call of a compiled function), 3 for ``op``, 2 for the rest, and a
recorder keeps only the levels it was asked for.

While a thread traces a compiled function, the compiler installs a *trace overlay*
(:func:`set_trace_overlay`) as the active recorder: on that thread, a span becomes markers of the
compiled program (``tnp_train.compiler.spans``) whatever profiler runs or not, so a trace does
not depend on the profiler; the overlay hands other threads' spans to the session's recorder.
Nothing here imports anything but the standard library, so any layer of tnp_train may use it.
"""
from __future__ import annotations

import threading
import time

__all__ = ["span", "complete", "instant", "level", "set_recorder", "get_recorder", "clock",
           "LEVELS", "level_of", "NO_SPAN", "set_trace_overlay"]

# the active recorder, or None: read once per span. A hot path reads it inline, as
# ``tracing.active_recorder`` (``set_recorder`` rebinds it, so a name imported from here would
# go stale: not in __all__)
active_recorder = None
_session_recorder = None       # what set_recorder installed (a profiling session's recorder)
_overlay = None                # what set_trace_overlay installed, active over it
_lock = threading.Lock()

clock = time.perf_counter

# the host tracer level at which each category is recorded; unlisted categories are level 2
LEVELS = {"step": 1, "trace": 1, "function": 1, "op": 3}


def level_of(cat):
    """The host tracer level at which spans of category ``cat`` are recorded."""
    return LEVELS.get(cat, 2)


class _NoSpan:
    """What :func:`span` returns when nothing is recorded: one shared object."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def cancel(self):
        """(A recording span forgets itself; this one has nothing to forget.)"""


NO_SPAN = _NoSpan()


def span(name, cat, _start=None, **args):
    """A context manager recording ``[enter, exit]`` as a span ``name`` of category ``cat``
    with ``args``; ``_start`` (a :data:`clock` value) backdates its start. ``cancel()`` on the
    object drops the span (a step that found no batch)."""
    r = active_recorder
    if r is None:
        return NO_SPAN
    return r.span(name, cat, _start, args)


def complete(name, cat, t_start, t_end, **args):
    """Record a span that already happened, from :data:`clock` values ``t_start`` to
    ``t_end``, on the calling thread."""
    r = active_recorder
    if r is not None:
        r.complete(name, cat, t_start, t_end, args)


def instant(name, cat, **args):
    """Record a moment (an instant event) on the calling thread."""
    r = active_recorder
    if r is not None:
        r.instant(name, cat, args)


def level(n=2):
    """Whether a recorder is active and records spans of host tracer level ``n``."""
    r = active_recorder
    return r is not None and r.level >= n


def set_recorder(recorder):
    """Install ``recorder`` (None removes it); returns the one it replaces."""
    global active_recorder, _session_recorder
    with _lock:
        previous, _session_recorder = _session_recorder, recorder
        active_recorder = _overlay if _overlay is not None else recorder
    return previous


def get_recorder():
    """The profiling session's recorder, or None (never the trace overlay)."""
    return _session_recorder


def set_trace_overlay(overlay):
    """Install the compiler's trace overlay (None removes it) over the session's recorder;
    returns the one it replaces."""
    global active_recorder, _overlay
    with _lock:
        previous, _overlay = _overlay, overlay
        active_recorder = overlay if overlay is not None else _session_recorder
    return previous
