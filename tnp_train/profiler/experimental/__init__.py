"""``tt.profiler.experimental``: TF 2.4's ``tf.profiler.experimental`` API.

``start(logdir, options=None)`` / ``stop(save=True)``, the ``Profile(logdir, options=None)``
context manager, ``Trace(name, **kwargs)`` spans (``Trace("train", step_num=n, _r=1)`` marks a
training step of a custom loop), ``ProfilerOptions``, and the ``server`` / ``client``
submodules for capture on demand. Traces go to ``logdir/plugins/profile/<run>/`` as Chrome
trace-event files (one per worker and a merged one; docs/profiler.md). Differences from TF:
under ``mpiexec`` every rank must call ``start`` and ``stop`` (they align the ranks' clocks and
gather the merged trace); errors are RuntimeError whose message starts with TF's error name.
"""
from __future__ import annotations

import importlib

from ...utils import tracing as _tracing
from ..session import ProfilerOptions, start, stop

__all__ = ["start", "stop", "Profile", "Trace", "ProfilerOptions", "server", "client"]


class Profile:
    """Mirrors ``tf.profiler.experimental.Profile(logdir, options=None)``: ``start`` on entry,
    ``stop`` on exit."""

    def __init__(self, logdir, options=None):
        self._logdir = logdir
        self._options = options

    def __enter__(self):
        start(self._logdir, self._options)
        return self

    def __exit__(self, *exc):
        stop()
        return False


class Trace:
    """Mirrors ``tf.profiler.experimental.Trace(name, **kwargs)``: a span on the trace while
    profiling (nothing otherwise); ``kwargs`` become its args. ``_r=1`` makes it a step
    (category ``step``, the unit of the step-time breakdown; give ``step_num=``), else a user
    span (category ``trace``). Both are host tracer level 1."""

    __slots__ = ("_span",)

    def __init__(self, name, **kwargs):
        r = kwargs.pop("_r", None)
        self._span = _tracing.span(str(name), "step" if r == 1 else "trace", **kwargs)

    def __enter__(self):
        self._span.__enter__()
        return self

    def __exit__(self, *exc):
        return self._span.__exit__(*exc)


def __getattr__(name):
    # the capture server and client import sockets and threads: loaded when first used
    if name in ("server", "client"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
