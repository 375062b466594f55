"""An endpoint: one rank's requests, replies and the thread that receives them.

The *pump* thread is the only one that receives. It hands replies to the futures of the
requests waiting for them and everything else to the role's handler (``on_message(source,
header, buffers)``, run on the pump thread: a parameter server applies updates there one at a
time, which is what makes each update atomic), completes the sends in flight, and reports lost
ranks (``on_lost(rank)``) after failing the requests still waiting on them.

Waiting costs no core: between probes that find nothing the pump sleeps: 50 us for 2 ms after
a message, 0.2 ms for 100 ms after one or while this rank awaits an answer (or, on the chief, a
closure's result), 2 ms once idle, so an idle rank polls about 500 times a second. Only while a
large message of its own is being sent does it poll without sleeping (the message moves only
while the sender calls into MPI).
"""
from __future__ import annotations

import concurrent.futures
import itertools
import os
import sys
import threading
import time
import traceback

from . import wire
from .errors import PeerLostError

__all__ = ["Endpoint"]

_MIN_SLEEP = 50e-6       # for 2 ms after a message
_HOT_SECONDS = 2e-3
_WARM_SLEEP = 2e-4       # for 100 ms after, or while an answer or a result is awaited
_WARM_SECONDS = 0.1
_MAX_SLEEP = 2e-3        # idle


class Endpoint:
    """Requests and notifications to other ranks over ``transport``; ``handler`` gets the rest
    (see the module docstring)."""

    def __init__(self, transport, handler, name):
        self.transport = transport
        self.rank = transport.rank
        self.size = transport.size
        self.handler = handler
        self.name = name
        self.lost = set()
        self._futures = {}            # request id -> (destination, future)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"tnp-ps-{name}", daemon=True)

    def start(self):
        self._thread.start()
        return self

    @property
    def running(self):
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self, timeout=5.0):
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # ------------------------------------------------------------------ sending
    def send_frame(self, dest, frame):
        """Send a built :class:`wire.Frame`; False if ``dest`` is lost (a send that finds it
        lost reports the loss at once, on this thread)."""
        if dest in self.lost:
            return False
        if self.transport.send(dest, frame.encode()):
            return True
        self._on_lost((dest,))
        return False

    def notify(self, dest, header, frame=None):
        f = frame if frame is not None else wire.Frame(header)
        if frame is not None:
            f.header.update(header)
        return self.send_frame(dest, f)

    def request(self, dest, frame):
        """Send ``frame`` (a :class:`wire.Frame`) as a request; a future of ``(header,
        buffers)`` of the answer (failed with :class:`PeerLostError` if ``dest`` is lost)."""
        fut = concurrent.futures.Future()
        rid = next(self._ids)
        frame.header["id"] = rid
        with self._lock:
            self._futures[rid] = (dest, fut)
        if not self.send_frame(dest, frame):
            self._fail(rid, PeerLostError(dest))
        return fut

    def reply(self, dest, request_header, frame):
        frame.header["re"] = request_header["id"]
        return self.send_frame(dest, frame)

    def _fail(self, rid, exc):
        with self._lock:
            entry = self._futures.pop(rid, None)
        if entry is not None and not entry[1].done():
            entry[1].set_exception(exc)

    @property
    def waiting(self):
        return bool(self._futures)

    # ------------------------------------------------------------------ the pump
    def _pump(self):
        transport = self.transport
        last = time.monotonic()
        expecting = getattr(self.handler, "expecting", None)
        try:
            while not self._stop.is_set():
                lost = transport.progress()
                if lost:
                    self._on_lost(lost)
                if transport.sending:
                    wait = 0            # a large message moves only while we call into MPI
                else:
                    quiet = time.monotonic() - last
                    if quiet < _HOT_SECONDS:
                        wait = _MIN_SLEEP
                    elif quiet < _WARM_SECONDS or self._futures or (
                            expecting is not None and expecting()):
                        wait = _WARM_SLEEP
                    else:
                        wait = _MAX_SLEEP
                ev = transport.poll(wait)
                if ev is None:
                    continue
                last = time.monotonic()
                if ev[0] == "lost":
                    self._on_lost(ev[1])
                    continue
                _, src, frame = ev
                header, buffers = wire.decode(frame)
                re = header.get("re")
                if re is not None:
                    with self._lock:
                        entry = self._futures.pop(re, None)
                    if entry is not None and not entry[1].done():
                        entry[1].set_result((header, buffers))
                    continue
                self.handler.on_message(src, header, buffers)
        except BaseException:
            self._crash()

    def report_lost(self, ranks):
        """Ranks found lost (by the transport, a failed send, or another rank's report): fail
        the requests waiting on them and tell the role, once per rank."""
        self._on_lost(ranks)

    def _on_lost(self, ranks):
        for r in ranks:
            with self._lock:
                if r in self.lost:
                    continue
                self.lost.add(r)
            # however the loss was learnt (ULFM, a failed send, another rank's report), this
            # process must not wait in MPI_Finalize for the dead rank at exit
            note = getattr(self.transport, "note_lost", None)
            if note is not None:
                note((r,))
            # the role hears first, so a caller woken by the failed request sees its state
            self.handler.on_lost(r)
            with self._lock:
                dead = [rid for rid, (dest, _) in self._futures.items() if dest == r]
            for rid in dead:
                self._fail(rid, PeerLostError(r))

    def _crash(self):
        """The pump itself failed (a bug, not a closure's error): this rank can no longer take
        part. The role decides what that means (``handler.on_pump_crash``)."""
        text = traceback.format_exc()
        sys.stderr.write(f"[tnp_train ps {self.name}, rank {self.rank}] the receiving thread "
                         f"failed:\n{text}")
        sys.stderr.flush()
        with self._lock:
            futures = list(self._futures.items())
            self._futures.clear()
        for _, (_, fut) in futures:
            if not fut.done():
                fut.set_exception(RuntimeError(f"the receiving thread of rank {self.rank} "
                                               f"failed:\n{text}"))
        crash = getattr(self.handler, "on_pump_crash", None)
        if crash is not None:
            crash(text)
        else:
            os._exit(1)


def wait_future(fut, stop=None, poll=0.5):
    """``fut.result()``, waking every ``poll`` s so a stop event (or a signal) is seen."""
    while True:
        try:
            return fut.result(timeout=poll)
        except concurrent.futures.TimeoutError:
            if stop is not None and stop():
                raise
            continue


def now():
    return time.monotonic()
