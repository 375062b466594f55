"""The recorder: what a running profiler installs in :mod:`tnp_train.utils.tracing`.

It keeps, per thread, the stack of open spans and the end of the last span closed there, and
appends finished events to one bounded buffer (``max_events``, a million by default as TF caps
a trace; what does not fit is counted in ``dropped``). Spans nest on each thread by
construction: a span closes before its parent, and the events handed over after the fact (a
collective's wait and transfer, which the collective layer reports when it completes) are
clipped to start no earlier than the innermost open span and the last span closed on that
thread, so they never straddle a sibling.

Times come in as ``time.perf_counter()`` seconds and are kept as trace microseconds:
``t * 1e6 + clock_shift_us`` (the shift is the test-only ``TNP_PROFILER_CLOCK_SHIFT_US``).
"""
from __future__ import annotations

import os
import sys
import threading

from ..utils import tracing as _tracing

__all__ = ["Recorder", "DEFAULT_MAX_EVENTS", "thread_label"]

DEFAULT_MAX_EVENTS = 1_000_000

_clock = _tracing.clock
_NO_SPAN = _tracing.NO_SPAN
_NEG_INF = float("-inf")

# the spans whose GPU work device_tracer_level=1 brackets with CUDA events
_DEVICE_CATS = frozenset(("forward", "backward", "optimizer", "op"))

# Python functions of the profiler itself are not traced by python_tracer_level=1
_HERE = os.path.dirname(os.path.abspath(__file__))
_OWN_FILES = frozenset(
    [os.path.join(_HERE, f) for f in ("recorder.py", "session.py", "writer.py", "device.py")]
    + [os.path.join(_HERE, "experimental", "__init__.py"), os.path.abspath(_tracing.__file__)])


def thread_label(thread):
    """The name a thread's row gets in the trace: ``main``, ``input pipeline (...)`` for
    ``tt.data``'s threads, else the thread's own name (``replica 1``, ...)."""
    if thread is threading.main_thread():
        return "main"
    name = thread.name
    if name.startswith("tt.data"):
        return f"input pipeline ({name})"
    return name


class _ThreadState:
    """One thread's part of the recording: its trace ``tid``, its open spans, the end of the
    last span closed on it, and the open Python frames (python_tracer_level=1)."""

    __slots__ = ("tid", "stack", "last_end", "frames")

    def __init__(self, tid):
        self.tid = tid
        self.stack = []
        self.last_end = _NEG_INF
        self.frames = []


class _Span:
    """A span being recorded (what :func:`tracing.span` returns while a recorder is active)."""

    __slots__ = ("rec", "st", "name", "cat", "args", "t0", "done", "gpu")

    def __init__(self, rec, name, cat, t0, args):
        self.rec = rec
        self.name = name
        self.cat = cat
        self.args = args
        self.t0 = t0
        self.done = False
        self.gpu = None

    def __enter__(self):
        rec = self.rec
        st = self.st = rec.state()
        if self.t0 is None:
            self.t0 = _clock() * 1e6 + rec.shift_us
        st.stack.append(self)
        if rec.gpu is not None and self.cat in _DEVICE_CATS:
            self.gpu = rec.gpu.begin()
        return self

    def __exit__(self, *exc):
        rec = self.rec
        t1 = _clock() * 1e6 + rec.shift_us
        st = self.st
        stack = st.stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:      # left out of order (a generator suspended inside it)
            stack.remove(self)
        if self.done or rec.closed:
            return False
        self.done = True
        if self.gpu is not None:
            rec.gpu.end(self.gpu, self.name, self.cat, st.tid)
        if exc[0] is not None and not issubclass(exc[0], StopIteration):
            args = dict(self.args) if self.args else {}
            args["error"] = exc[0].__name__
            self.args = args
        st.last_end = t1
        rec.append(("X", self.name, self.cat, self.t0, t1 - self.t0, st.tid, self.args))
        return False

    def cancel(self):
        """Drop this span: it is not recorded when it ends."""
        self.done = True


class Recorder:
    """Records spans for one process; see the module docstring.

    ``host_level``: 1 steps and user traces, 2 also the instrumented spans, 3 also every tnp
    operation (the ``op`` spans come from the session's operation listener, which calls
    :meth:`op_before`/:meth:`op_after`). ``python_level=1``: Python function spans through
    :meth:`profile_func`. ``gpu``: a device tracer (see ``device.py``) or None.
    """

    def __init__(self, host_level=2, python_level=0, gpu=None, max_events=None,
                 clock_shift_us=0.0):
        self.level = int(host_level)
        self.python_level = int(python_level)
        self.gpu = gpu
        self.max_events = DEFAULT_MAX_EVENTS if max_events is None else int(max_events)
        self.shift_us = float(clock_shift_us)
        self.events = []
        self.dropped = 0
        self.closed = False
        self.start_us = self.now_us()
        self.stop_us = None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._states = []
        self.threads = {}                 # tid -> thread name
        self._main_ident = threading.main_thread().ident
        self._next_tid = 1
        self._levels = dict(_tracing.LEVELS)

    # -- clock and threads ---------------------------------------------------------------------
    def now_us(self):
        return _clock() * 1e6 + self.shift_us

    def to_us(self, t):
        """A ``perf_counter`` time (seconds) as this recorder's trace microseconds."""
        return t * 1e6 + self.shift_us

    def state(self):
        """The calling thread's state (made, and its thread named, on first use)."""
        try:
            return self._local.st
        except AttributeError:
            pass
        thread = threading.current_thread()
        with self._lock:
            if thread.ident == self._main_ident:
                tid = 0
            else:
                tid = self._next_tid
                self._next_tid += 1
            st = _ThreadState(tid)
            self._states.append(st)
            self.threads[tid] = thread_label(thread)
        self._local.st = st
        return st

    # -- the buffer ----------------------------------------------------------------------------
    def append(self, event):
        ev = self.events
        if len(ev) < self.max_events:
            ev.append(event)
        else:
            self.dropped += 1

    # -- what tracing.span / complete / instant call --------------------------------------------
    def span(self, name, cat, start, args):
        if self._levels.get(cat, 2) > self.level or self.closed:
            return _NO_SPAN
        return _Span(self, name, cat, None if start is None else self.to_us(start), args)

    def complete(self, name, cat, t_start, t_end, args):
        if self._levels.get(cat, 2) > self.level or self.closed:
            return
        st = self.state()
        t0, t1 = self.to_us(t_start), self.to_us(t_end)
        if t1 > st.last_end:
            st.last_end = t1
        self.append(("X", name, cat, t0, max(t1 - t0, 0.0), st.tid, args))

    def instant(self, name, cat, args):
        if self._levels.get(cat, 2) > self.level or self.closed:
            return
        self.append(("i", name, cat, self.now_us(), None, self.state().tid, args))

    # -- tnp operations (level 3): the operation listener's callbacks ----------------------------
    def op_before(self, name, args, kwargs):
        active = _tracing.active_recorder
        if active is not self and active is not None and active.traces_here():
            return None         # traced into a compiled program: its replays are timed
        gpu = self.gpu
        return (_clock(), gpu.begin() if gpu is not None else None)

    def op_after(self, token, name, args, kwargs, result):
        self._op_end(token, name, None)

    def op_error(self, token, name, args, kwargs, exc):
        self._op_end(token, name, {"error": type(exc).__name__})

    def _op_end(self, token, name, args):
        if self.closed or token is None:
            return
        t1 = _clock() * 1e6 + self.shift_us
        st = self.state()
        if token[1] is not None:
            self.gpu.end(token[1], name, "op", st.tid)
        t0 = token[0] * 1e6 + self.shift_us
        st.last_end = t1
        self.append(("X", name, "op", t0, t1 - t0, st.tid, args))

    # -- collectives (level 2): the collective layer's completed events --------------------------
    def on_collective(self, event):
        """A ``wait`` span (entered -> every rank arrived) inside a ``collective`` span (entered
        -> done) on the thread that completed it. Both start no earlier than what this thread
        was visibly doing since (the innermost open span, the last span closed), so an
        all-reduce started during the backward pass and finished later counts only the time
        the thread spent blocked on it; the unclipped entry time is kept in the args."""
        if self.closed:
            return
        st = self.state()
        t_start = self.to_us(event["t_start"])
        t_arrived = self.to_us(event["t_wait_end"])
        t_end = self.to_us(event["t_end"])
        lo = t_start
        if st.stack:
            lo = max(lo, st.stack[-1].t0)
        if st.frames:
            lo = max(lo, st.frames[-1][0])
        lo = min(max(lo, st.last_end), t_end)
        name = event["name"]
        seq = event["seq"]
        self.append(("X", name, "collective", lo, t_end - lo, st.tid,
                     {"name": name, "op": event.get("op"), "seq": seq,
                      "bytes": event.get("bytes", 0), "rank": event.get("rank"),
                      "entered_us": t_start, "arrived_us": t_arrived}))
        wait_end = min(t_arrived, t_end)
        if wait_end > lo:
            self.append(("X", "wait for ranks", "wait", lo, wait_end - lo, st.tid,
                         {"name": name, "seq": seq}))
        st.last_end = t_end

    # -- Python functions (python_tracer_level=1) ---------------------------------------------
    def profile_func(self, frame, event, arg):
        """The ``sys.setprofile`` function: a ``python`` span per Python function call."""
        if event == "call":
            code = frame.f_code
            if code.co_filename in _OWN_FILES:
                return
            if self.closed:
                sys.setprofile(None)     # a thread started while profiling: stop here too
                return
            self.state().frames.append((_clock() * 1e6 + self.shift_us, code))
        elif event == "return":
            code = frame.f_code
            if code.co_filename in _OWN_FILES or self.closed:
                return
            st = self.state()
            frames = st.frames
            if not frames or frames[-1][1] is not code:
                return           # a function that was running when profiling started
            t0 = frames.pop()[0]
            t1 = _clock() * 1e6 + self.shift_us
            st.last_end = t1
            self.append(("X", code, "python", t0, t1 - t0, st.tid, None))

    # -- the end -------------------------------------------------------------------------------
    def close(self):
        """Stop recording; spans still open (the step the profiler was stopped in, the Python
        frames around the stop) are recorded up to now with ``args.truncated``."""
        t = self.now_us()
        self.closed = True
        self.stop_us = t
        for st in list(self._states):
            for sp in list(st.stack):
                if not sp.done:
                    sp.done = True
                    args = dict(sp.args) if sp.args else {}
                    args["truncated"] = True
                    self.append(("X", sp.name, sp.cat, sp.t0, max(t - sp.t0, 0.0), st.tid, args))
            st.stack.clear()
            for t0, code in st.frames:
                self.append(("X", code, "python", t0, max(t - t0, 0.0), st.tid,
                             {"truncated": True}))
            st.frames.clear()

    def trace_events(self, pid):
        """The recorded events as Chrome trace-event dicts (process id ``pid``), with the
        threads' name metadata first."""
        out = [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
               for tid, name in sorted(self.threads.items())]
        out += [{"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                 "args": {"sort_index": tid}} for tid in sorted(self.threads)]
        names = {}
        for ph, name, cat, ts, dur, tid, args in self.events:
            if not isinstance(name, str):          # a Python code object
                label = names.get(name)
                if label is None:
                    label = names[name] = (f"{name.co_qualname} "
                                           f"({os.path.basename(name.co_filename)}:"
                                           f"{name.co_firstlineno})")
                name = label
            ev = {"ph": ph, "name": name, "cat": cat, "ts": round(ts, 3), "pid": pid,
                  "tid": tid, "args": args or {}}
            if ph == "X":
                ev["dur"] = round(dur, 3)
            else:
                ev["s"] = "t"                     # an instant on its thread
            out.append(ev)
        if self.gpu is not None:
            out += self.gpu.trace_events(pid, self.threads)
        return out

    # -- compiled programs: the replay observer (tnp.extend.set_replay_observer) ----------------
    @property
    def time_nodes(self):
        """Whether compiled programs time each kernel and node for this recorder (level 3)."""
        return self.level >= 3 and not self.closed

    def node_time(self, label, t_start, t_end):
        """A compiled program's kernel or node ran from ``t_start`` to ``t_end``: an ``op``
        span (its time counts for the span around it, as a tnp operation's)."""
        self.complete(label, "op", t_start, t_end, {"compiled": True})

    def step_count(self):
        return sum(1 for e in self.events if e[2] == "step" and e[0] == "X")
