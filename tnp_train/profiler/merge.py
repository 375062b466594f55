"""Trace files of a profiling run: reading and writing ``*.trace.json.gz``, the run folder
``logdir/plugins/profile/<run>/`` (TF's convention), and the merge of several workers' traces
into one trace on one clock.

A trace is the Chrome trace-event dict of docs/profiler.md: ``{"traceEvents": [...],
"displayTimeUnit": "ms", "metadata": {"rank", "host", "clock_offset_us", ...}}``. A worker's
``clock_offset_us`` is what must be added to its timestamps to put them on worker 0's clock.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import time

from tnp_train.checkpoint._io import atomic_write_bytes

__all__ = ["PROFILE_DIR", "MERGED_NAME", "read_trace", "write_trace", "trace_file_name",
           "new_run_dir", "merge_traces"]

PROFILE_DIR = os.path.join("plugins", "profile")
MERGED_NAME = "merged.trace.json.gz"
_RUN_FORMAT = "%Y_%m_%d_%H_%M_%S"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def read_trace(path):
    """The trace dict stored at ``path`` (gzip-compressed or plain JSON)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        trace = json.loads(data)
    except ValueError as e:
        raise ValueError(f"profiler: {path} is not a JSON trace: {e}") from None
    if isinstance(trace, list):            # the trace-event format's bare array form
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError(f"profiler: {path} holds no 'traceEvents' list")
    return trace


def write_trace(path, trace):
    """Write ``trace`` to ``path`` as gzip-compressed JSON, atomically (temp file + rename)."""
    data = json.dumps(trace, separators=(",", ":")).encode("utf-8")
    # mtime=0: the same trace gives the same bytes
    atomic_write_bytes(path, gzip.compress(data, compresslevel=6, mtime=0))


def trace_file_name(host, rank):
    """``<host>.<rank>.trace.json.gz``, the host name made safe for a file name."""
    return f"{_UNSAFE.sub('_', str(host)) or 'localhost'}.{int(rank)}.trace.json.gz"


def new_run_dir(logdir, now=None):
    """Create and return ``logdir/plugins/profile/<run>``, ``<run>`` the local time as
    ``YYYY_MM_DD_HH_MM_SS`` (a suffix ``_1``, ``_2``... when that folder exists already)."""
    base = os.path.join(os.fspath(logdir), PROFILE_DIR)
    os.makedirs(base, exist_ok=True)
    name = time.strftime(_RUN_FORMAT, time.localtime(now))
    for i in range(1000):
        path = os.path.join(base, name if i == 0 else f"{name}_{i}")
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"profiler: no free run folder named {name}_* under {base}")


def _rank_of(trace):
    meta = trace.get("metadata") or {}
    if isinstance(meta.get("rank"), int):
        return meta["rank"]
    for ev in trace["traceEvents"]:
        if isinstance(ev, dict) and isinstance(ev.get("pid"), int):
            return ev["pid"]
    return 0


def merge_traces(traces):
    """One trace holding every worker's events, ``pid`` = the worker's rank and ``ts`` moved
    onto worker 0's clock by the worker's ``metadata.clock_offset_us``.

    Two traces claiming the same rank (two single-process jobs, say) keep apart: the later one
    gets the next free ``pid`` and its process name says so.
    """
    events, used, offsets, hosts, dropped, steps = [], set(), {}, {}, 0, 0
    for trace in traces:
        meta = trace.get("metadata") or {}
        rank = _rank_of(trace)
        pid = rank if rank not in used else max(used) + 1
        used.add(pid)
        offset = float(meta.get("clock_offset_us") or 0.0)
        offsets[str(pid)] = offset
        hosts[str(pid)] = meta.get("host", "")
        dropped += int(meta.get("dropped_events") or 0)
        steps = max(steps, int(meta.get("steps") or 0))
        for ev in trace["traceEvents"]:
            if not isinstance(ev, dict):
                continue
            ev = dict(ev)
            ev["pid"] = pid
            if isinstance(ev.get("ts"), (int, float)):
                ev["ts"] = ev["ts"] + offset
            if pid != rank and ev.get("ph") == "M" and ev.get("name") == "process_name":
                args = dict(ev.get("args") or {})
                args["name"] = f"{args.get('name', f'worker {rank}')} [also rank {rank}]"
                ev["args"] = args
            events.append(ev)
    # metadata events first, then by time (a stable sort keeps each thread's order on ties)
    events.sort(key=lambda e: (e.get("ph") != "M", e.get("ts", 0.0)))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"merged": True, "ranks": sorted(used), "hosts": hosts,
                         "clock_offset_us": offsets, "dropped_events": dropped,
                         "steps": steps}}
