"""A worker's trace as an XSpace, the protocol buffer TensorBoard's Profile tab (the
``tensorboard-plugin-profile`` / ``xprof`` package) reads from ``<host>.xplane.pb``.

The message layout is TF's ``tsl/profiler/protobuf/xplane.proto`` (package
``tensorflow.profiler``); only its field numbers matter on the wire, and they are the table
below. The bytes are encoded here by hand, so writing a profile needs no protobuf package
(tests/fixtures/make_xplane_fixture.py has TF's own classes read them).

What the plugin makes of a host-only profile: one plane ``/host:CPU`` with a line per thread;
an event with the int stats ``_r=1`` and ``step_num`` is a step (TF marks its training steps
with ``TraceMe("train", step_num=n, _r=1)``), and the overview page and the trace viewer group
what happens inside it. Every other span keeps its name and its args as stats, with its
category in the stat ``cat``. Times: each line's ``timestamp_ns`` is the start of the profile
in Unix-epoch nanoseconds, each event's ``offset_ps`` counts from it.
"""
from __future__ import annotations

import json
import math
import re
import struct

__all__ = ["FIELDS", "xspace_bytes", "xplane_file_name", "HOST_PLANE", "TASK_PLANE"]

HOST_PLANE = "/host:CPU"
TASK_PLANE = "Task Environment"

# (message, field) -> field number, from xplane.proto (the facts; the names are TF's)
FIELDS = {
    ("XSpace", "planes"): 1, ("XSpace", "errors"): 2, ("XSpace", "warnings"): 3,
    ("XSpace", "hostnames"): 4,
    ("XPlane", "id"): 1, ("XPlane", "name"): 2, ("XPlane", "lines"): 3,
    ("XPlane", "event_metadata"): 4, ("XPlane", "stat_metadata"): 5, ("XPlane", "stats"): 6,
    ("MapEntry", "key"): 1, ("MapEntry", "value"): 2,
    ("XLine", "id"): 1, ("XLine", "display_id"): 10, ("XLine", "name"): 2,
    ("XLine", "display_name"): 11, ("XLine", "timestamp_ns"): 3, ("XLine", "duration_ps"): 9,
    ("XLine", "events"): 4,
    ("XEvent", "metadata_id"): 1, ("XEvent", "offset_ps"): 2, ("XEvent", "num_occurrences"): 5,
    ("XEvent", "duration_ps"): 3, ("XEvent", "stats"): 4,
    ("XStat", "metadata_id"): 1, ("XStat", "double_value"): 2, ("XStat", "uint64_value"): 3,
    ("XStat", "int64_value"): 4, ("XStat", "str_value"): 5, ("XStat", "bytes_value"): 6,
    ("XStat", "ref_value"): 7,
    ("XEventMetadata", "id"): 1, ("XEventMetadata", "name"): 2,
    ("XEventMetadata", "display_name"): 4, ("XEventMetadata", "metadata"): 3,
    ("XEventMetadata", "stats"): 5, ("XEventMetadata", "child_id"): 6,
    ("XStatMetadata", "id"): 1, ("XStatMetadata", "name"): 2,
    ("XStatMetadata", "description"): 3,
}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NOT_SCOPE = re.compile(r"[^A-Za-z0-9_/-]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The plugin's op tables (framework op stats, the overview's host time) count events named as
# TF names its ops, "<scope>:<Type>"; the trace viewer shows the display name, our span's name.
# The type of a span of each category (a layer's forward: its class):
_OP_TYPES = {"forward": "Forward", "backward": "Backward", "optimizer": "ApplyGradients",
             "collective": "Collective", "wait": "WaitForRanks", "input": "IteratorGetNext",
             "checkpoint": "Checkpoint", "copy": "Copy", "op": "TnpOp"}
_PACK_DOUBLE = struct.Struct("<d").pack
_VARINT, _FIXED64, _LEN = 0, 1, 2


def xplane_file_name(host, rank, world_size):
    """``<host>.xplane.pb`` for a single worker (TF's name), ``<host>_rank<r>.xplane.pb`` for
    each worker of a job (the plugin lists a host per file, named by what precedes
    ``.xplane.pb``)."""
    safe = _UNSAFE.sub("_", str(host)) or "localhost"
    if int(world_size) <= 1:
        return f"{safe}.xplane.pb"
    return f"{safe}_rank{int(rank)}.xplane.pb"


# -- the wire format ---------------------------------------------------------------------------

def _varint(n):
    """A varint; negative int64 values take ten bytes (two's complement), as protobuf's."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _int(field, n):
    """An int64/uint64 field; proto3 leaves zeros out."""
    return _key(field, _VARINT) + _varint(int(n)) if n else b""


def _str(field, s):
    if not s:
        return b""
    data = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return _key(field, _LEN) + _varint(len(data)) + data


def _msg(field, body):
    """An embedded message (written even when empty: a repeated element counts)."""
    return _key(field, _LEN) + _varint(len(body)) + body


def _f(message, field):
    return FIELDS[(message, field)]


# -- stats -------------------------------------------------------------------------------------

class _StatTable:
    """The plane's stat metadata: a stat name gets an id on first use (ids from 1)."""

    def __init__(self):
        self.ids = {}
        self.encoded = {}           # (name, type, value) -> bytes: most stats repeat

    def id(self, name):
        i = self.ids.get(name)
        if i is None:
            i = self.ids[name] = len(self.ids) + 1
        return i

    def stat(self, name, value):
        key = (name, type(value), value) if isinstance(value, (str, int)) else None
        if key is not None:
            body = self.encoded.get(key)
            if body is not None:
                return body
        # the value is one of a oneof: written even when zero (a zero step_num is a step_num)
        body = _int(_f("XStat", "metadata_id"), self.id(name))
        if isinstance(value, (bool, int)) and -(1 << 63) <= value < (1 << 63):
            body += _key(_f("XStat", "int64_value"), _VARINT) + _varint(int(value))
        elif isinstance(value, float) and math.isfinite(value):
            body += _key(_f("XStat", "double_value"), _FIXED64) + _PACK_DOUBLE(value)
        elif isinstance(value, str):
            body += _msg(_f("XStat", "str_value"), value.encode("utf-8"))
        else:                       # lists, dicts, None, huge ints, nan: their JSON text
            body += _msg(_f("XStat", "str_value"),
                         json.dumps(value, default=str).encode("utf-8"))
        if key is not None:
            self.encoded[key] = body
        return body

    def metadata(self):
        out = []
        for name, i in self.ids.items():
            value = (_int(_f("XStatMetadata", "id"), i)
                     + _str(_f("XStatMetadata", "name"), name))
            entry = _int(_f("MapEntry", "key"), i) + _msg(_f("MapEntry", "value"), value)
            out.append(_msg(_f("XPlane", "stat_metadata"), entry))
        return b"".join(out)


def _event_stats(stats, ev):
    """An event's stats: its category, its args, and TF's step markers for a step."""
    cat = ev.get("cat")
    args = ev.get("args") or {}
    out = [stats.stat("cat", cat)] if cat else []
    if cat == "step":
        # TF's step marker: a root event (_r=1) numbered by step_num
        out.append(stats.stat("_r", 1))
        n = args.get("step_num")
        if isinstance(n, int) and not isinstance(n, bool):
            out.append(stats.stat("step_num", n))
    for k, v in args.items():
        if cat == "step" and k in ("_r", "step_num"):
            continue
        out.append(stats.stat(str(k), v))
    return [_msg(_f("XEvent", "stats"), s) for s in out]


def _op_name(ev):
    """The event's name in the plugin's op naming, or None for a step, a user trace or a
    Python function (they stay as they are)."""
    cat = ev.get("cat")
    op_type = _OP_TYPES.get(cat)
    if op_type is None:
        return None
    name = str(ev.get("name", ""))
    cls = (ev.get("args") or {}).get("class")
    if cat == "forward" and isinstance(cls, str) and _IDENTIFIER.fullmatch(cls):
        op_type = cls
    scope = _NOT_SCOPE.sub("/", name.replace(".", "/").replace(" (backward)", "")).strip("/")
    return f"{scope or cat}:{op_type}"


# -- the space ---------------------------------------------------------------------------------

def xspace_bytes(trace, host, epoch_offset_us):
    """The XSpace of one worker's trace dict (``writer.worker_trace``'s) as bytes.

    ``epoch_offset_us`` is added to the trace's times (after its ``metadata.clock_offset_us``,
    which puts them on worker 0's clock) to make Unix-epoch microseconds, so the workers of a
    job line up when the plugin shows them together."""
    meta = trace.get("metadata") or {}
    shift_us = float(meta.get("clock_offset_us") or 0.0) + float(epoch_offset_us)
    threads = {}
    spans = []
    for ev in trace.get("traceEvents", ()):
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        if ph == "M":
            if ev.get("name") == "thread_name":
                threads[ev.get("tid", 0)] = str((ev.get("args") or {}).get("name", ""))
        elif ph in ("X", "i", "I") and isinstance(ev.get("ts"), (int, float)):
            spans.append(ev)
    start_us = meta.get("start_us")
    if not isinstance(start_us, (int, float)):
        start_us = min((e["ts"] for e in spans), default=0.0)
    stop_us = meta.get("stop_us")
    if not isinstance(stop_us, (int, float)):
        stop_us = max((e["ts"] + float(e.get("dur") or 0.0) for e in spans), default=start_us)
    start_us = min([start_us] + [e["ts"] for e in spans])
    # offsets are taken from the trace's own times (exact to the ps); only the line's start
    # carries the shift to the epoch (a double there is good to a fraction of a microsecond)
    base_ns = round((start_us + shift_us) * 1000.0)

    names = {}                      # (name, display name) -> metadata id (ids from 1)
    op_names = {}                   # (name, cat, class) -> the op name (or None)
    stats = _StatTable()
    by_tid = {}
    # by start, the longer first: a span that starts with its parent (a collective clipped to
    # the start of the optimizer step around it) comes after the parent, so viewers nest it
    for ev in sorted(spans, key=lambda e: (e["ts"], -float(e.get("dur") or 0.0))):
        shown = str(ev.get("name", ""))
        cls = (ev.get("args") or {}).get("class")
        k = (shown, ev.get("cat"), cls if isinstance(cls, str) else None)
        op = op_names.get(k, k)
        if op is k:
            op = op_names[k] = _op_name(ev)
        key = (shown, "") if op is None else (op, shown)
        mid = names.get(key)
        if mid is None:
            mid = names[key] = len(names) + 1
        offset_ps = max(0, round((ev["ts"] - start_us) * 1e6))
        dur_ps = max(0, round(float(ev.get("dur") or 0.0) * 1e6))
        body = (_int(_f("XEvent", "metadata_id"), mid) + _int(_f("XEvent", "offset_ps"), offset_ps)
                + _int(_f("XEvent", "duration_ps"), dur_ps) + b"".join(_event_stats(stats, ev)))
        tid = ev.get("tid", 0)
        by_tid.setdefault(tid, []).append(_msg(_f("XLine", "events"), body))

    duration_ps = max(0, round((stop_us - start_us) * 1e6))
    lines = []
    for tid in sorted(set(by_tid) | set(threads), key=lambda t: (not isinstance(t, int), t)):
        label = threads.get(tid) or f"thread {tid}"
        line_id = tid if isinstance(tid, int) else len(lines) + 1_000_000
        body = (_int(_f("XLine", "id"), line_id) + _str(_f("XLine", "name"), label)
                + _int(_f("XLine", "timestamp_ns"), base_ns) + b"".join(by_tid.get(tid, ()))
                + _int(_f("XLine", "duration_ps"), duration_ps)
                + _int(_f("XLine", "display_id"), line_id)
                + _str(_f("XLine", "display_name"), label))
        lines.append(_msg(_f("XPlane", "lines"), body))

    event_md = []
    for (name, shown), i in names.items():
        value = (_int(_f("XEventMetadata", "id"), i) + _str(_f("XEventMetadata", "name"), name)
                 + _str(_f("XEventMetadata", "display_name"), shown))
        entry = _int(_f("MapEntry", "key"), i) + _msg(_f("MapEntry", "value"), value)
        event_md.append(_msg(_f("XPlane", "event_metadata"), entry))
    host_plane = (_str(_f("XPlane", "name"), HOST_PLANE) + b"".join(lines)
                  + b"".join(event_md) + stats.metadata())

    # TF's task plane: when the profile started and stopped (Unix-epoch ns)
    task = _StatTable()
    task_stats = [task.stat("profile_start_time", base_ns),
                  task.stat("profile_stop_time", base_ns + duration_ps // 1000)]
    task_plane = (_int(_f("XPlane", "id"), 1) + _str(_f("XPlane", "name"), TASK_PLANE)
                  + task.metadata() + b"".join(_msg(_f("XPlane", "stats"), s)
                                               for s in task_stats))
    space = _msg(_f("XSpace", "planes"), host_plane) + _msg(_f("XSpace", "planes"), task_plane)
    dropped = int(meta.get("dropped_events") or 0)
    if dropped:
        space += _str(_f("XSpace", "warnings"),
                      f"{dropped} events were dropped: the trace buffer holds "
                      f"{meta.get('max_events')} events per process")
    return space + _str(_f("XSpace", "hostnames"), str(host))
