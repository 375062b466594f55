"""Profiling sessions: ``start``/``stop`` (TF 2.4's programmatic mode) and ``collect`` (what the
capture server runs), the options, and the clock offsets between ranks.

A session builds a :class:`~.recorder.Recorder`, installs what its options ask for (the
recorder in :mod:`tnp_train.utils.tracing` for the explicit spans; at ``host_tracer_level`` 2 a
subscription to the collective layer's events; at 3 a tnp operation listener;
``python_tracer_level=1`` a ``sys.setprofile`` function in this thread and the threads started
afterwards; ``device_tracer_level=1`` CUDA events where CuPy runs) and removes all of it when
it ends. One session runs at a time in a process.

Under ``mpiexec``, ``start`` and ``stop`` are collective: every rank calls them (as every rank
runs the same script, or the same ``TensorBoard`` callback). ``start`` lets worker 0 name the
run and estimates each rank's clock offset to worker 0 (an NTP-style exchange, the best of
several rounds); ``stop`` writes every worker's trace and worker 0's merged trace.
"""
from __future__ import annotations

import collections
import math
import os
import socket
import sys
import threading
import time

from ..utils import tracing as _tracing
from .recorder import Recorder

__all__ = ["ProfilerOptions", "start", "stop", "collect", "is_running", "estimate_clock_offset",
           "clock_shift_us"]

ProfilerOptions = collections.namedtuple(
    "ProfilerOptions", ["host_tracer_level", "python_tracer_level", "device_tracer_level",
                        "delay_ms"])
ProfilerOptions.__new__.__defaults__ = (2, 0, 1, None)
ProfilerOptions.__doc__ = (
    "Mirrors ``tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, "
    "python_tracer_level=0, device_tracer_level=1, delay_ms=None)``.")

CLOCK_SHIFT_ENV = "TNP_PROFILER_CLOCK_SHIFT_US"
# NTP-style rounds when profiling starts; the round with the shortest round trip wins
CLOCK_ROUNDS = 8

_lock = threading.RLock()
_active = None                 # the running session
_clock_offset_us = 0.0         # this rank's last estimated offset to worker 0 (for collect)

_ALREADY = "AlreadyExistsError: Another profiler is running."
_NONE_RUNNING = "UnavailableError: Cannot export profiling results. No profiler is running."


def _check_level(options, field, allowed):
    value = getattr(options, field)
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise ValueError(f"ProfilerOptions: {field} must be one of {sorted(allowed)}, got "
                         f"{value!r}")


def check_options(options):
    """``options`` (None, a :class:`ProfilerOptions`, or a mapping of its fields) validated."""
    if options is None:
        return ProfilerOptions()
    if isinstance(options, dict):
        unknown = set(options) - set(ProfilerOptions._fields)
        if unknown:
            raise ValueError(f"ProfilerOptions: unknown fields {sorted(unknown)}; expected "
                             f"{list(ProfilerOptions._fields)}")
        options = ProfilerOptions(**options)
    if not isinstance(options, ProfilerOptions):
        raise TypeError(f"profiler options must be a ProfilerOptions, got "
                        f"{type(options).__name__}")
    _check_level(options, "host_tracer_level", {0, 1, 2, 3})
    _check_level(options, "python_tracer_level", {0, 1})
    _check_level(options, "device_tracer_level", {0, 1})
    d = options.delay_ms
    if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float))
                          or not math.isfinite(d) or d < 0):
        raise ValueError(f"ProfilerOptions: delay_ms must be None or a number >= 0, got {d!r}")
    return options


def clock_shift_us():
    """The test-only shift of this process's trace clock (env ``TNP_PROFILER_CLOCK_SHIFT_US``,
    microseconds; 0 when unset)."""
    raw = os.environ.get(CLOCK_SHIFT_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {CLOCK_SHIFT_ENV}={raw!r} is not a number of "
                         "microseconds") from None
    if not math.isfinite(value):
        raise ValueError(f"environment variable {CLOCK_SHIFT_ENV}={raw!r} must be finite")
    return value


def _env_rank():
    """This process's rank from the launcher's environment (0 without one), read without any
    communication (``collect`` runs beside training and must not join a collective)."""
    for key in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"):
        raw = os.environ.get(key)
        if raw is not None and raw.strip().isdigit():
            return int(raw)
    return 0


def is_running():
    """Whether a profiling session (``start`` or ``collect``) is running in this process."""
    return _active is not None


class _Session:
    def __init__(self, options, kind):
        self.options = options
        self.kind = kind
        self.hooks = []
        gpu = None
        self.recorder = Recorder(host_level=options.host_tracer_level,
                                 python_level=options.python_tracer_level,
                                 clock_shift_us=clock_shift_us())
        if options.device_tracer_level >= 1:
            from .device import gpu_tracer
            gpu = gpu_tracer(self.recorder.now_us, self.recorder.max_events)
        self.recorder.gpu = gpu
        self.thread = threading.current_thread()
        self.logdir = self.run_dir = None
        self.world = None
        self.rank = 0
        self.host = socket.gethostname()
        self.clock_offset_us = 0.0

    def install(self):
        rec, opts = self.recorder, self.options
        try:
            if opts.host_tracer_level >= 2:
                from ..distribute.collective import subscribe
                self.hooks.append(subscribe(rec.on_collective).remove)
            if opts.host_tracer_level >= 3:
                from tnp import extend
                # an observer: compiled functions keep running compiled (their kernels and
                # nodes are timed through the replay observer below)
                self.hooks.append(extend.add_op_listener(before=rec.op_before, after=rec.op_after,
                                                         error=rec.op_error,
                                                         observer=True).remove)
            if opts.python_tracer_level >= 1:
                threading.setprofile(rec.profile_func)
                sys.setprofile(rec.profile_func)
                self.hooks.append(_unset_profile)
            if _tracing.set_recorder(rec) is not None:   # pragma: no cover - guarded by _active
                raise RuntimeError(_ALREADY)
            self.hooks.append(lambda: _tracing.set_recorder(None))
            # compiled programs replay the markers of the levels recorded (and, at level 3,
            # time their kernels) while this session records
            from tnp import extend as _extend
            _extend.set_replay_observer(rec)
            self.hooks.append(lambda: _extend.set_replay_observer(None))
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self):
        for undo in reversed(self.hooks):
            undo()
        self.hooks = []
        self.recorder.close()


def _unset_profile():
    threading.setprofile(None)
    sys.setprofile(None)


# -- clocks ------------------------------------------------------------------------------------

def estimate_clock_offset(comm, now_us, rounds=CLOCK_ROUNDS):
    """This rank's clock offset to rank 0 of ``comm`` in microseconds, to be *added* to its
    trace times (``now_us()`` readings) to put them on rank 0's clock. Collective: every rank
    of ``comm`` calls it.

    Each round is NTP's exchange made of two collectives: rank 0 reads ``t0`` and broadcasts
    it, every rank reads ``t1`` when it arrives and ``t2`` as it answers in an all-gather, and
    rank 0 reads ``t3`` when every answer is in. Rank r's offset is ``((t1 - t0) + (t2 -
    t3)) / 2`` off by at most half the round trip ``(t3 - t0) - (t2 - t1)``, so the round with
    the shortest round trip is kept. The result is cached for :func:`collect`.
    """
    global _clock_offset_us
    if comm.size == 1:
        _clock_offset_us = 0.0
        return 0.0
    rank = comm.rank
    best = [None] * comm.size      # rank 0 keeps (round trip, offset) per rank
    for _ in range(max(1, int(rounds))):
        t0 = now_us() if rank == 0 else None
        t0 = comm.broadcast_object(t0, root=0)
        t1 = now_us()
        t2 = now_us()
        answers = comm.allgather_object((t1, t2))
        if rank == 0:
            t3 = now_us()
            for r, (a1, a2) in enumerate(answers):
                rtt = (t3 - t0) - (a2 - a1)
                off = ((a1 - t0) + (a2 - t3)) / 2.0
                if r and (best[r] is None or rtt < best[r][0]):
                    best[r] = (rtt, off)
    offsets = [0.0] + [b[1] for b in best[1:]] if rank == 0 else None
    offsets = comm.broadcast_object(offsets, root=0)
    # offsets[r] is rank r's clock minus rank 0's: subtracting it moves r onto rank 0's clock
    _clock_offset_us = -float(offsets[rank])
    return _clock_offset_us


# -- start / stop ------------------------------------------------------------------------------

def start(logdir, options=None):
    """Start profiling into ``logdir`` (``tf.profiler.experimental.start``); collective under
    ``mpiexec``. RuntimeError (TF: AlreadyExistsError) if a profiler is running."""
    global _active
    from . import writer
    logdir = os.fspath(logdir)
    options = check_options(options)
    with _lock:
        if _active is not None:
            raise RuntimeError(_ALREADY)
        session = _Session(options, "start")
        from ..distribute.collective import get_world
        world = get_world()
        session.world, session.rank, session.logdir = world, world.rank, logdir
        session.run_dir = writer.open_run(world, logdir)
        session.clock_offset_us = estimate_clock_offset(world, session.recorder.now_us)
        session.recorder.start_us = session.recorder.now_us()
        session.install()
        _active = session


def stop(save=True):
    """Stop profiling and (``save``) write the traces (``tf.profiler.experimental.stop``);
    collective under ``mpiexec``. Returns the run folder (None without ``save``).
    RuntimeError (TF: UnavailableError) if no profiler was started."""
    global _active
    from . import writer
    with _lock:
        session = _active
        if session is None or session.kind != "start":
            raise RuntimeError(_NONE_RUNNING)
        try:
            session.uninstall()
        finally:
            _active = None
        dropped = session.recorder.dropped
        if dropped:
            import warnings
            warnings.warn(f"profiler: {dropped} events were dropped: the trace buffer holds "
                          f"{session.recorder.max_events} events per process", RuntimeWarning,
                          stacklevel=2)
        if not save:
            writer.discard_run(session.world, session.run_dir)
            return None
        return writer.write_run(session)


def collect(duration_s, options=None):
    """Record this process for ``duration_s`` seconds while it goes on running (training in
    other threads), and return this worker's trace dict; writes no file and communicates with
    no other rank (what the capture server calls). ``options.delay_ms`` waits first.

    Its ``metadata.clock_offset_us`` is the offset :func:`estimate_clock_offset` last
    estimated in this process (0 if it never ran: one host's ranks share one clock). With
    ``python_tracer_level=1``, Python 3.11 lets it trace only the threads started during the
    capture (``sys.setprofile`` cannot reach a running thread before Python 3.12)."""
    global _active
    from . import writer
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) \
            or not math.isfinite(duration_s) or duration_s <= 0:
        raise ValueError(f"collect: duration_s must be a number of seconds > 0, got "
                         f"{duration_s!r}")
    options = check_options(options)
    if options.delay_ms:
        time.sleep(options.delay_ms / 1000.0)
    with _lock:
        if _active is not None:
            raise RuntimeError(_ALREADY)
        session = _Session(options, "collect")
        session.rank = _env_rank()
        session.clock_offset_us = _clock_offset_us
        session.install()
        _active = session
    try:
        time.sleep(duration_s)
    finally:
        with _lock:
            try:
                session.uninstall()
            finally:
                _active = None
    return writer.worker_trace(session)
