"""The profiler server of a worker: captures on demand from a running job (TF 2.4's
``tf.profiler.experimental.server.start``).

``start(port)`` starts a daemon thread that listens on the loopback interface (another host
only when ``host`` says so). A client (``client.trace``, ``python -m tnp_train.profiler
capture``) connects and asks for a capture of ``duration_ms``; the worker records while its
training goes on and sends its trace back. In an MPI job with several ranks on one host each
rank binds ``port + its local rank`` and prints the address it serves on.

The protocol is JSON in length-prefixed frames, never pickle, and a request can only choose
among the fixed operations below with bounded, type-checked values: nothing in it is ever run.

- request: ``b"TNPP"``, a 4-byte big-endian length (at most ``MAX_REQUEST_BYTES``), then a
  UTF-8 JSON object: ``{"op": "ping"}`` or ``{"op": "capture", "duration_ms": N, "options":
  {...}}`` (and optionally ``"version": 1``) (``options``: ``host_tracer_level`` 0-3, ``python_tracer_level`` 0-1,
  ``device_tracer_level`` 0-1, ``delay_ms``, all optional; ``1 <= N <= MAX_DURATION_MS``).
- response: ``b"TNPR"``, an 8-byte big-endian length, then gzip-compressed UTF-8 JSON:
  ``{"ok": true, "rank", "host", ...}`` (``"trace"``: the worker's trace dict, for a capture)
  or ``{"ok": false, "error": "..."}``. A malformed or oversized request gets the error and the
  connection is closed; one capture runs at a time (another gets ``busy``).
"""
from __future__ import annotations

import gzip
import json
import os
import socket
import struct
import sys
import threading

__all__ = ["start", "stop", "address", "MAX_REQUEST_BYTES", "MAX_DURATION_MS"]

REQUEST_MAGIC, RESPONSE_MAGIC = b"TNPP", b"TNPR"
PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 64 * 1024
MAX_DURATION_MS = 10 * 60 * 1000         # one capture: at most 10 minutes
_REQUEST_TIMEOUT_S = 10.0                # to send the request once connected
_SEND_TIMEOUT_S = 120.0                  # to take the response (a large trace) away
_MAX_CONNECTIONS = 8
# option -> (smallest, largest); delay_ms may also be None
_OPTIONS = {"host_tracer_level": (0, 3), "python_tracer_level": (0, 1),
            "device_tracer_level": (0, 1), "delay_ms": (0, MAX_DURATION_MS)}

_lock = threading.Lock()
_server = None


class RequestError(ValueError):
    """A request the server refuses (its message goes back to the client)."""


def _int_in(name, value, lo, hi):
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestError(f"{name} must be an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise RequestError(f"{name}={value} is outside [{lo}, {hi}]")
    return value


def parse_request(body):
    """The validated request of a frame's body (bytes): ``{"op": ..., ...}``, or RequestError."""
    try:
        req = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RequestError(f"the request is not UTF-8 JSON ({type(e).__name__})") from None
    if not isinstance(req, dict):
        raise RequestError(f"the request must be a JSON object, got {type(req).__name__}")
    if req.get("version", PROTOCOL_VERSION) != PROTOCOL_VERSION:
        raise RequestError(f"protocol version {req['version']!r} is not {PROTOCOL_VERSION}")
    op = req.get("op")
    if op == "ping":
        extra = set(req) - {"op", "version"}
        if extra:
            raise RequestError(f"unknown keys for ping: {sorted(extra)}")
        return {"op": "ping"}
    if op != "capture":
        raise RequestError(f"unknown op {op!r}: expected 'ping' or 'capture'")
    extra = set(req) - {"op", "version", "duration_ms", "options"}
    if extra:
        raise RequestError(f"unknown keys for capture: {sorted(extra)}")
    if "duration_ms" not in req:
        raise RequestError("capture needs duration_ms")
    duration = _int_in("duration_ms", req["duration_ms"], 1, MAX_DURATION_MS)
    options = req.get("options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise RequestError(f"options must be an object, got {type(options).__name__}")
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise RequestError(f"unknown options {sorted(unknown)}: expected some of "
                           f"{sorted(_OPTIONS)}")
    checked = {}
    for name, value in options.items():
        if name == "delay_ms" and value is None:
            checked[name] = None
            continue
        checked[name] = _int_in(name, value, *_OPTIONS[name])
    return {"op": "capture", "duration_ms": duration, "options": checked}


def _recv_exact(sock, n):
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 16))
        if not chunk:
            raise ConnectionError(f"the connection closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def encode_response(obj):
    body = gzip.compress(json.dumps(obj, separators=(",", ":")).encode("utf-8"), mtime=0)
    return RESPONSE_MAGIC + struct.pack(">Q", len(body)) + body


def _default_collect(duration_s, options):
    # the recording session, imported at the first capture (the fields not given keep
    # ProfilerOptions' defaults)
    from tnp_train.profiler import session
    return session.collect(duration_s, options or None)


def _identity():
    from tnp_train.distribute.cluster_resolver.mpi_cluster_resolver import (
        local_rank_from_env, rank_and_size_from_env)
    rank, size = rank_and_size_from_env()
    return rank, size, local_rank_from_env()


class _Server:
    def __init__(self, host, port, collect):
        self.collect = collect
        self.rank, self.size, _ = _identity()
        self.hostname = socket.gethostname()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise OSError(e.errno, f"profiler server: cannot bind {host}:{port}: "
                                   f"{e.strerror}") from None
        self.sock.listen(16)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self.capturing = threading.Lock()
        self.slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self.closed = False
        self.thread = threading.Thread(target=self._serve, name="profiler server", daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return                        # the socket was closed by stop()
            if not self.slots.acquire(blocking=False):
                conn.close()                  # too many clients at once: refuse, don't queue
                continue
            threading.Thread(target=self._handle, args=(conn,), name="profiler request",
                             daemon=True).start()

    def _handle(self, conn):
        try:
            with conn:
                conn.settimeout(_REQUEST_TIMEOUT_S)
                try:
                    reply = self._answer(conn)
                except RequestError as e:
                    reply = {"ok": False, "error": f"rejected: {e}"}
                try:
                    data = encode_response(reply)
                except (TypeError, ValueError) as e:   # a trace JSON cannot hold
                    data = encode_response({"ok": False, "error": f"capture failed: the trace "
                                            f"is not JSON: {e}"})
                conn.settimeout(_SEND_TIMEOUT_S)
                conn.sendall(data)
        except OSError:
            pass                              # the client went away: nothing to tell it
        finally:
            self.slots.release()

    def _answer(self, conn):
        head = _recv_exact(conn, 8)
        if head[:4] != REQUEST_MAGIC:
            raise RequestError("not a tnp_train profiler request (bad magic bytes)")
        (length,) = struct.unpack(">I", head[4:])
        if length > MAX_REQUEST_BYTES:
            raise RequestError(f"a request of {length} bytes exceeds the limit of "
                               f"{MAX_REQUEST_BYTES}")
        req = parse_request(_recv_exact(conn, length))
        who = {"rank": self.rank, "size": self.size, "host": self.hostname,
               "address": self.address, "pid": os.getpid()}
        if req["op"] == "ping":
            return {"ok": True, **who}
        if not self.capturing.acquire(blocking=False):
            return {"ok": False, "error": "busy: this worker is already capturing", **who}
        try:
            trace = self.collect(req["duration_ms"] / 1000.0, req["options"])
        except Exception as e:                # the capture failed; the server goes on
            return {"ok": False, "error": f"capture failed: {type(e).__name__}: {e}", **who}
        finally:
            self.capturing.release()
        return {"ok": True, **who, "trace": trace}

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=5)


def start(port, host="127.0.0.1", _collect=None):
    """Start the profiler server of this worker (mirrors ``tf.profiler.experimental.server.
    start(port)``; differences: binds ``host``, the loopback interface by default; several ranks
    of one MPI job on one host bind ``port + local rank``; returns the ``"host:port"`` served).

    ``port=0`` takes a free port. Raises RuntimeError when a server already runs in this
    process, OSError when the port is taken.
    """
    global _server
    port = int(port)
    if not 0 <= port <= 65535:
        raise ValueError(f"profiler server: port {port} is outside [0, 65535]")
    with _lock:
        if _server is not None:
            raise RuntimeError(f"profiler server: already serving at {_server.address}; "
                               "call stop() first")
        rank, size, local_rank = _identity()
        if port and size > 1 and local_rank:
            port += local_rank
        _server = _Server(host, port, _collect or _default_collect)
        where = f"rank {rank} of {size}" if size > 1 else "this worker"
        print(f"tnp_train.profiler: {where} serves captures at {_server.address}",
              file=sys.stderr, flush=True)
        return _server.address


def address():
    """The ``"host:port"`` the server of this process serves, or None."""
    s = _server
    return None if s is None else s.address


def stop():
    """Stop the server (a capture in progress finishes and its client gets its answer)."""
    global _server
    with _lock:
        s, _server = _server, None
    if s is not None:
        s.close()
