"""Collective events: who subscribes (the profiler) sees every completed collective.

An event is ``dict(name, op, seq, bytes, t_start, t_wait_end, t_end, rank)``: ``t_start`` is
when this rank entered the collective, ``t_wait_end`` when it knew every rank had arrived (the
time before it is waiting for others, the time after it moving and reducing data), ``t_end``
when the result was ready; seconds of ``time.perf_counter()``. ``bytes`` is this rank's payload.
"""
from __future__ import annotations

import threading
import warnings

__all__ = ["subscribe", "Subscription"]

_lock = threading.Lock()
# Replaced, never mutated, so emit() can iterate without the lock while others subscribe.
_listeners = ()


class Subscription:
    """The handle :func:`subscribe` returns; ``remove()`` stops the deliveries (idempotent)."""

    __slots__ = ("listener",)

    def __init__(self, listener):
        self.listener = listener

    def remove(self):
        global _listeners
        with _lock:
            _listeners = tuple(s for s in _listeners if s is not self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def subscribe(listener):
    """Call ``listener(event)`` after every collective of every communicator of this process
    completes; returns a :class:`Subscription` (``.remove()``, or use it as a context manager)."""
    global _listeners
    if not callable(listener):
        raise TypeError(f"subscribe: listener must be callable, got {listener!r}")
    sub = Subscription(listener)
    with _lock:
        _listeners = _listeners + (sub,)
    return sub


def has_listeners():
    return bool(_listeners)


def emit(event):
    for sub in _listeners:
        try:
            sub.listener(dict(event))
        except Exception as exc:  # noqa: BLE001
            # The collective has completed on every rank; raising here would lose its result on
            # this rank only and desynchronise the job, so a failing listener is reported instead.
            warnings.warn(f"collective event listener {sub.listener!r} raised "
                          f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
