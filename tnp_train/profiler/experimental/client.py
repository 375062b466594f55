"""Capture a profile from running workers through their profiler servers (TF 2.4's
``tf.profiler.experimental.client``): ``trace`` writes the traces under a logdir, ``monitor``
returns a short summary.
"""
from __future__ import annotations

import gzip
import json
import os
import socket
import struct
import threading
import time
import warnings

from tnp_train.checkpoint._io import atomic_write_bytes

from ..merge import MERGED_NAME, merge_traces, new_run_dir, trace_file_name, write_trace
from ..xplane import xplane_file_name, xspace_bytes
from .server import (MAX_DURATION_MS, PROTOCOL_VERSION, REQUEST_MAGIC, RESPONSE_MAGIC,
                     RequestError, parse_request)

__all__ = ["trace", "monitor", "capture", "parse_addresses"]

_CONNECT_TIMEOUT_S = 5.0
_ANSWER_MARGIN_S = 60.0          # beyond the capture's own duration (and delay)
_MAX_RESPONSE_BYTES = 4 << 30    # a full buffer of a million events is far below this
_RETRY_PAUSE_S = 0.5


def parse_addresses(service_addr, worker_list=""):
    """The ``(host, port)`` of every worker to ask: ``worker_list`` (comma-separated
    ``host[:port]``, a missing port is ``service_addr``'s) when given, else ``service_addr``
    (comma-separated ``host:port``, an optional ``grpc://`` prefix ignored)."""
    def split(item, default_port=None):
        item = item.strip()
        if item.startswith("grpc://"):
            item = item[len("grpc://"):]
        if item.startswith("["):                          # [ipv6]:port
            host, _, rest = item[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else None
        elif item.count(":") == 1:
            host, port = item.split(":")
        else:
            host, port = item, None
        if port is None or port == "":
            if default_port is None:
                raise ValueError(f"profiler client: the address {item!r} has no port "
                                 "(expected host:port)")
            port = default_port
        try:
            port = int(port)
        except ValueError:
            raise ValueError(f"profiler client: the port of {item!r} is not a number") from None
        if not host or not 0 < port <= 65535:
            raise ValueError(f"profiler client: {item!r} is not a host:port address")
        return host, port

    services = [split(s) for s in str(service_addr).split(",") if s.strip()]
    if not services:
        raise ValueError(f"profiler client: no address in service_addr={service_addr!r}")
    if worker_list and str(worker_list).strip():
        return [split(w, services[0][1]) for w in str(worker_list).split(",") if w.strip()]
    return services


def _options_dict(options):
    if options is None:
        return {}
    if hasattr(options, "_asdict"):                      # ProfilerOptions, a namedtuple
        options = options._asdict()
    if not isinstance(options, dict):
        raise TypeError(f"profiler client: options must be a ProfilerOptions or a dict, got "
                        f"{type(options).__name__}")
    return dict(options)


def _request(addr, req, timeout_s):
    """Send one request to ``addr`` and return its decoded answer (raises OSError/ValueError)."""
    body = json.dumps(req).encode("utf-8")
    with socket.create_connection(addr, timeout=_CONNECT_TIMEOUT_S) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(REQUEST_MAGIC + struct.pack(">I", len(body)) + body)
        head = _recv_exact(sock, 12)
        if head[:4] != RESPONSE_MAGIC:
            raise ValueError("the answer is not a tnp_train profiler response")
        (length,) = struct.unpack(">Q", head[4:])
        if length > _MAX_RESPONSE_BYTES:
            raise ValueError(f"an answer of {length} bytes exceeds {_MAX_RESPONSE_BYTES}")
        data = _recv_exact(sock, length)
    reply = json.loads(gzip.decompress(data).decode("utf-8"))
    if not isinstance(reply, dict):
        raise ValueError("the answer is not a JSON object")
    return reply


def _recv_exact(sock, n):
    buf, got = bytearray(n), 0
    view = memoryview(buf)
    while got < n:
        k = sock.recv_into(view[got:], min(n - got, 1 << 20))
        if not k:
            raise ConnectionError(f"the connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf)


def _fmt(addr):
    host, port = addr
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def capture(addresses, duration_ms, num_tracing_attempts=3, options=None):
    """Ask every worker of ``addresses`` at once for a capture of ``duration_ms``.

    Returns ``(traces, failures)``: ``traces`` maps ``"host:port"`` to the worker's answer
    (``"trace"``, ``"rank"``, ``"host"``...), ``failures`` maps ``"host:port"`` to why the last
    of its attempts failed. An attempt that fails, or brings back a trace without any span, is
    tried again, up to ``num_tracing_attempts`` times (as TF does).
    """
    duration_ms = int(duration_ms)
    attempts = int(num_tracing_attempts)
    if attempts < 1:
        raise ValueError(f"profiler client: num_tracing_attempts={attempts} must be >= 1")
    req = {"op": "capture", "version": PROTOCOL_VERSION, "duration_ms": duration_ms,
           "options": _options_dict(options)}
    try:   # the server's own check, so a bad request fails here with its message
        parse_request(json.dumps(req).encode("utf-8"))
    except RequestError as e:
        raise ValueError(f"profiler client: {e}") from None
    delay_ms = req["options"].get("delay_ms") or 0
    timeout_s = (duration_ms + delay_ms) / 1000.0 + _ANSWER_MARGIN_S
    traces, failures, lock = {}, {}, threading.Lock()

    def ask(addr):
        why = None
        for attempt in range(attempts):
            if attempt:
                time.sleep(_RETRY_PAUSE_S)
            try:
                reply = _request(addr, req, timeout_s)
            except (OSError, ValueError) as e:
                why = f"{type(e).__name__}: {e}"
                continue
            if not reply.get("ok"):
                why = str(reply.get("error", "the worker gave no reason"))
                if why.startswith("rejected:"):
                    break                          # asking again gets the same answer
                continue
            trace = reply.get("trace")
            if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
                why = "the answer holds no trace"
                continue
            with lock:
                traces[_fmt(addr)] = reply
            if any(isinstance(e, dict) and e.get("ph") == "X" for e in trace["traceEvents"]):
                return
            why = "no trace event was collected"   # kept, and tried again
        with lock:
            if _fmt(addr) in traces:
                failures.pop(_fmt(addr), None)
            else:
                failures[_fmt(addr)] = f"{why} (after {attempts} attempt(s))"

    threads = [threading.Thread(target=ask, args=(a,), name=f"profiler capture {_fmt(a)}",
                                daemon=True) for a in addresses]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    order = [_fmt(a) for a in addresses]
    return ({k: traces[k] for k in order if k in traces},
            {k: failures[k] for k in order if k in failures})


def trace(service_addr, logdir, duration_ms, worker_list="", num_tracing_attempts=3,
          options=None):
    """Capture ``duration_ms`` from every worker and write their traces (mirrors
    ``tf.profiler.experimental.client.trace``; differences: ``service_addr`` may list several
    comma-separated ``host:port``, all asked at once; returns what it wrote).

    Writes ``logdir/plugins/profile/<run>/<host>.<rank>.trace.json.gz`` and its XSpace (the
    Profile tab's ``<host>.xplane.pb``, ``<host>_rank<r>.xplane.pb`` when several workers were
    asked) per worker that answered and ``<run>/merged.trace.json.gz`` (clocks aligned by each
    trace's ``metadata.clock_offset_us``). A worker that does not answer is named in a RuntimeWarning and
    in the result's ``"failed"``; when none answers, raises ConnectionError. Returns ``{"run_dir",
    "files", "merged", "failed"}``.
    """
    if not isinstance(duration_ms, int) or isinstance(duration_ms, bool) \
            or not 1 <= duration_ms <= MAX_DURATION_MS:
        raise ValueError(f"profiler client: duration_ms={duration_ms!r} must be an integer in "
                         f"[1, {MAX_DURATION_MS}]")
    addresses = parse_addresses(service_addr, worker_list)
    answers, failures = capture(addresses, duration_ms, num_tracing_attempts, options)
    if not answers:
        raise ConnectionError("profiler capture: no worker answered: " + "; ".join(
            f"{a}: {why}" for a, why in failures.items()))
    run_dir = new_run_dir(logdir)
    files, names, xplanes = [], set(), set()
    # the XSpaces share worker 0's epoch (the traces' clock_offset_us are to worker 0's clock)
    epoch = [r["trace"].get("metadata", {}).get("epoch_offset_us") for r in answers.values()
             if r["trace"].get("metadata", {}).get("rank", r.get("rank")) == 0]
    epoch = epoch[0] if epoch else None
    for addr, reply in answers.items():
        tr = reply["trace"]
        meta = tr.setdefault("metadata", {})
        meta.setdefault("rank", reply.get("rank", 0))
        meta.setdefault("host", reply.get("host", addr))
        name = trace_file_name(meta["host"], meta["rank"])
        if name in names:            # two workers claim the same host and rank
            name = name.replace(".trace.json.gz", f".{addr.rsplit(':', 1)[1]}.trace.json.gz")
        names.add(name)
        write_trace(os.path.join(run_dir, name), tr)
        files.append(os.path.join(run_dir, name))
        xp = xplane_file_name(meta["host"], meta["rank"], len(answers) + len(failures))
        if xp in xplanes:
            xp = xp.replace(".xplane.pb", f"_{addr.rsplit(':', 1)[1]}.xplane.pb")
        xplanes.add(xp)
        own = float(meta.get("epoch_offset_us") or 0.0)
        atomic_write_bytes(os.path.join(run_dir, xp),
                           xspace_bytes(tr, meta["host"], own if epoch is None else epoch))
    merged = os.path.join(run_dir, MERGED_NAME)
    write_trace(merged, merge_traces([r["trace"] for r in answers.values()]))
    if failures:
        warnings.warn("profiler capture: no trace from " + "; ".join(
            f"{a} ({why})" for a, why in failures.items())
            + f"; the other workers' traces are in {run_dir}", RuntimeWarning, stacklevel=2)
    return {"run_dir": run_dir, "files": files, "merged": merged, "failed": failures}


def monitor(service_addr, duration_ms, level=1):
    """A short text summary of ``duration_ms`` of the workers' training (mirrors
    ``tf.profiler.experimental.client.monitor``): level 1, each worker's median step time and
    its breakdown in percent; level 2 adds the bottleneck sentence and the five spans with the
    most self time. Nothing is written."""
    from ..report import CATEGORIES, analyze
    if level not in (1, 2):
        raise ValueError(f"profiler monitor: level={level!r} must be 1 or 2")
    if not isinstance(duration_ms, int) or isinstance(duration_ms, bool) \
            or not 1 <= duration_ms <= MAX_DURATION_MS:
        raise ValueError(f"profiler monitor: duration_ms={duration_ms!r} must be an integer "
                         f"in [1, {MAX_DURATION_MS}]")
    answers, failures = capture(parse_addresses(service_addr), duration_ms, 1)
    lines = []
    rep = analyze([r["trace"] for r in answers.values()]) if answers else {"workers": {}}
    for rank, w in rep["workers"].items():
        med = w["median"]
        if not w["steps"]:
            lines.append(f"worker {rank}: no training step in {duration_ms} ms")
            continue
        total = sum(s["step_ms"] for s in w["steps"])
        shares = ", ".join(
            f"{c} {100 * sum(s[c + '_ms'] for s in w['steps']) / total:.0f}%"
            for c in CATEGORIES) if total > 0 else ""
        lines.append(f"worker {rank}: step {med['step_ms']:.2f} ms (median of "
                     f"{len(w['steps'])}): {shares}")
        if level == 2:
            top = ", ".join(f"{o['name']} ({o['cat']}) {o['self_ms']:.2f} ms"
                            for o in w["ops"][:5])
            if top:
                lines.append(f"  most self time: {top}")
    if level == 2 and answers:
        lines.append(f"bottleneck: {rep['bottleneck']}")
    for addr, why in failures.items():
        lines.append(f"no answer from {addr}: {why}")
    return "\n".join(lines)
