"""The profiler server and client: a capture while a loop runs, a worker that does not answer,
malformed and oversized requests refused with nothing run, one capture at a time, the port of
each local rank. The worker's recorder is replaced by a fake ``collect`` (the real one is
exercised end to end in test_profiler_capture_fit.py)."""
import gzip
import json
import os
import pickle
import socket
import struct
import threading
import time

import pytest

from prof_traces import fit_steps, worker_trace
from tnp_train.profiler import report as R
from tnp_train.profiler.experimental import client, server
from tnp_train.profiler.merge import read_trace


class FakeRecorder:
    """Stands for the recording half: sleeps ``duration_s`` and returns a trace of the steps
    the training loop ran meanwhile."""

    def __init__(self, rank=0, host="node0", offset_us=0.0):
        self.calls, self.rank, self.host, self.offset_us = [], rank, host, offset_us
        self.steps_seen = 0

    def __call__(self, duration_s, options):
        self.calls.append((duration_s, options))
        before = LOOP["steps"]
        time.sleep(duration_s)
        self.steps_seen = LOOP["steps"] - before
        return worker_trace(fit_steps(max(self.steps_seen, 1)), rank=self.rank, host=self.host,
                            offset_us=self.offset_us)


LOOP = {"steps": 0}


@pytest.fixture
def serve():
    """``serve(collect)`` starts this process's server on a free loopback port."""
    def start(collect):
        return server.start(0, _collect=collect)
    yield start
    server.stop()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw(addr, payload, read=True):
    """Send raw bytes to the server and return its decoded answer."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(payload)
        if not read:
            return None
        head = b""
        while len(head) < 12:
            chunk = s.recv(12 - len(head))
            assert chunk, "the server closed without an answer"
            head += chunk
        assert head[:4] == b"TNPR"
        (n,) = struct.unpack(">Q", head[4:])
        body = b""
        while len(body) < n:
            body += s.recv(n - len(body))
        return json.loads(gzip.decompress(body))


def frame(obj):
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return b"TNPP" + struct.pack(">I", len(body)) + body


def test_capture_while_a_training_loop_runs(serve, tmp_path, capsys):
    rec = FakeRecorder(offset_us=0.0)
    addr = serve(rec)
    assert f"serves captures at {addr}" in capsys.readouterr().err
    result, stop = {}, threading.Event()

    def capture():
        result["out"] = client.trace(addr, str(tmp_path), 300,
                                     options={"host_tracer_level": 3})
        stop.set()

    t = threading.Thread(target=capture)
    t.start()
    before = LOOP["steps"]
    while not stop.is_set():            # the "training loop" keeps going during the capture
        LOOP["steps"] += 1
        time.sleep(0.002)
    t.join()
    # the loop went on while the worker recorded (not how many steps: that is the machine's load)
    assert LOOP["steps"] - before >= rec.steps_seen >= 1
    assert rec.calls == [(0.3, {"host_tracer_level": 3})]
    out = result["out"]
    assert out["failed"] == {}
    assert [os.path.basename(f) for f in out["files"]] == ["node0.0.trace.json.gz"]
    assert os.path.dirname(out["files"][0]) == out["run_dir"]
    assert os.path.dirname(out["run_dir"]) == str(tmp_path / "plugins" / "profile")
    rep = R.report(tmp_path)
    assert len(rep["workers"]["0"]["steps"]) == rec.steps_seen
    assert read_trace(out["merged"])["metadata"]["ranks"] == [0]


def test_two_workers_and_one_that_does_not_answer(tmp_path):
    # two servers in one process are two threads here: run the second one's protocol through
    # a second _Server object (start() keeps one per process, as TF does)
    r0 = server._Server("127.0.0.1", 0, FakeRecorder(rank=0, host="a"))
    r1 = server._Server("127.0.0.1", 0, FakeRecorder(rank=1, host="b", offset_us=-50_000.0))
    dead = f"127.0.0.1:{free_port()}"
    try:
        services = ",".join([r0.address, dead, r1.address])
        with pytest.warns(RuntimeWarning, match=f"no trace from {dead} .*after 2 attempt"):
            out = client.trace(services, str(tmp_path), 50, num_tracing_attempts=2)
    finally:
        r0.close()
        r1.close()
    assert list(out["failed"]) == [dead]
    assert "ConnectionRefusedError" in out["failed"][dead]
    assert sorted(os.path.basename(f) for f in out["files"]) == ["a.0.trace.json.gz",
                                                                 "b.1.trace.json.gz"]
    one = read_trace(out["files"][1])
    merged = read_trace(out["merged"])
    # rank 1's events moved by its clock offset (-50 ms) onto rank 0's clock
    first1 = min(e["ts"] for e in one["traceEvents"] if e["ph"] == "X")
    first1_merged = min(e["ts"] for e in merged["traceEvents"] if e["ph"] == "X"
                        and e["pid"] == 1)
    assert first1_merged == first1 - 50_000.0
    assert sorted(R.report(out["run_dir"])["workers"]) == ["0", "1"]


def test_no_worker_answers(tmp_path):
    dead = f"localhost:{free_port()}"
    with pytest.raises(ConnectionError, match=f"no worker answered: {dead}: .*after 1 attempt"):
        client.trace(dead, str(tmp_path), 10, num_tracing_attempts=1)
    assert not (tmp_path / "plugins").exists()


@pytest.mark.parametrize("payload, why", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "bad magic bytes"),
    (b"TNPP" + struct.pack(">I", 10 * 1024 * 1024), "exceeds the limit of 65536"),
    (frame(b"\xff\xfe not utf-8"), "not UTF-8 JSON"),
    (frame(b"{'op': 'capture'}"), "not UTF-8 JSON"),
    (frame(b"[" * 100000 + b"]" * 100000), "exceeds the limit"),
    (frame(b"[" * 30000 + b"]" * 30000), "not UTF-8 JSON"),
    (frame([1, 2]), "must be a JSON object"),
    (frame({"op": "__import__('os').system('touch PWNED')"}), "unknown op"),
    (frame({"op": "capture"}), "capture needs duration_ms"),
    (frame({"op": "capture", "duration_ms": "100"}), "duration_ms must be an integer"),
    (frame({"op": "capture", "duration_ms": True}), "duration_ms must be an integer"),
    (frame({"op": "capture", "duration_ms": 0}), "outside [1, 600000]"),
    (frame({"op": "capture", "duration_ms": 10 ** 12}), "outside [1, 600000]"),
    (frame({"op": "capture", "duration_ms": 10, "callback": "os.system"}), "unknown keys"),
    (frame({"op": "capture", "duration_ms": 10, "options": {"exec": "x"}}), "unknown options"),
    (frame({"op": "capture", "duration_ms": 10, "options": {"host_tracer_level": 9}}),
     "host_tracer_level=9 is outside [0, 3]"),
    (frame({"op": "capture", "duration_ms": 10, "options": []}), "options must be an object"),
    (frame({"op": "ping", "version": 2}), "protocol version 2 is not 1"),
])
def test_malformed_requests_are_refused_and_nothing_runs(serve, tmp_path, payload, why,
                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = FakeRecorder()
    addr = serve(rec)
    reply = raw(addr, payload)
    assert reply["ok"] is False
    assert reply["error"].startswith("rejected: ") and why in reply["error"]
    assert rec.calls == []
    assert not (tmp_path / "PWNED").exists()
    assert raw(addr, frame({"op": "ping"}))["ok"] is True       # the server goes on


class Boom:
    def __reduce__(self):
        return (open, (os.path.join(os.getcwd(), "PWNED"), "w"))


def test_a_pickle_is_never_unpickled(serve, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = FakeRecorder()
    addr = serve(rec)
    for payload in (pickle.dumps(Boom()), frame(pickle.dumps(Boom()))):
        reply = raw(addr, payload)
        assert reply["ok"] is False and reply["error"].startswith("rejected: ")
    assert not (tmp_path / "PWNED").exists() and rec.calls == []


def test_a_client_that_sends_nothing_does_not_block_the_server(serve, monkeypatch):
    # 1 s, not less: the ping below must get its request in within it, on a loaded machine too
    monkeypatch.setattr(server, "_REQUEST_TIMEOUT_S", 1.0)
    addr = serve(FakeRecorder())
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as idle:   # says nothing
        assert raw(addr, frame({"op": "ping"}))["ok"] is True
        assert idle.recv(1) == b""            # the server gave up on it, without an answer


def test_too_many_idle_clients_are_turned_away_not_queued(serve, monkeypatch):
    monkeypatch.setattr(server, "_MAX_CONNECTIONS", 2)
    addr = serve(FakeRecorder())
    host, port = addr.rsplit(":", 1)
    idle = [socket.create_connection((host, int(port))) for _ in range(2)]
    try:
        time.sleep(0.1)                       # both are being served (waiting for a request)
        with socket.create_connection((host, int(port)), timeout=5) as extra:
            assert extra.recv(1) == b""       # closed at once
    finally:
        for s in idle:
            s.close()
    deadline = time.monotonic() + 5
    while True:                               # their slots come back
        try:
            assert raw(addr, frame({"op": "ping"}))["ok"] is True
            break
        except (AssertionError, OSError):
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_one_capture_at_a_time(serve):
    # the first capture lasts until the second has been answered: events, not durations, so
    # that a loaded machine cannot reorder them
    capturing, release = threading.Event(), threading.Event()
    rec = FakeRecorder()

    def collect(duration_s, options):
        capturing.set()
        assert release.wait(60), "never released"
        return rec(duration_s, options)

    addr = serve(collect)
    answers = []
    first = threading.Thread(target=lambda: answers.append(
        raw(addr, frame({"op": "capture", "duration_ms": 10}))))
    first.start()
    try:
        assert capturing.wait(60), "the first capture never started"
        busy = raw(addr, frame({"op": "capture", "duration_ms": 10}))
    finally:
        release.set()
        first.join(60)
    assert busy == {**{k: busy[k] for k in ("rank", "size", "host", "address", "pid")},
                    "ok": False, "error": "busy: this worker is already capturing"}
    assert answers[0]["ok"] is True and answers[0]["trace"]["traceEvents"]


def test_a_failing_capture_is_reported_and_the_server_goes_on(serve, tmp_path):
    def broken(duration_s, options):
        raise RuntimeError("the profiler is already running (started by start())")

    addr = serve(broken)
    reply = raw(addr, frame({"op": "capture", "duration_ms": 5}))
    assert reply["ok"] is False
    assert reply["error"] == ("capture failed: RuntimeError: the profiler is already running "
                              "(started by start())")
    with pytest.raises(ConnectionError, match="already running"):
        client.trace(addr, str(tmp_path), 5, num_tracing_attempts=2)


def test_a_trace_that_is_not_json_is_an_error_not_a_dead_connection(serve):
    addr = serve(lambda duration_s, options: {"traceEvents": [], "metadata": {"x": object()}})
    reply = raw(addr, frame({"op": "capture", "duration_ms": 1}))
    assert reply["ok"] is False and reply["error"].startswith("capture failed: the trace is not")


def test_ping_says_who_answers(serve):
    addr = serve(FakeRecorder())
    reply = raw(addr, frame({"op": "ping"}))
    assert reply == {"ok": True, "rank": 0, "size": 1, "host": socket.gethostname(),
                     "address": addr, "pid": os.getpid()}


def test_start_twice_stop_and_restart(serve):
    addr = serve(FakeRecorder())
    assert server.address() == addr
    with pytest.raises(RuntimeError, match=f"already serving at {addr}"):
        server.start(0)
    server.stop()
    assert server.address() is None
    server.stop()                                           # a second stop does nothing
    assert serve(FakeRecorder()) != ""


def test_each_local_rank_binds_port_plus_its_local_rank(monkeypatch, capsys):
    for key in list(os.environ):
        if key.startswith(("OMPI_", "PMI_", "PMIX_", "MV2_", "SLURM")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    for _ in range(20):
        port = free_port()
        try:
            addr = server.start(port - 1, _collect=FakeRecorder())
            break
        except OSError:
            continue
    try:
        assert addr == f"127.0.0.1:{port}"
        assert f"rank 3 of 4 serves captures at 127.0.0.1:{port}" in capsys.readouterr().err
        assert raw(addr, frame({"op": "ping"}))["rank"] == 3
    finally:
        server.stop()


def test_port_taken_and_bad_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot bind 127.0.0.1:{port}"):
            server.start(port)
    with pytest.raises(ValueError, match="port 70000 is outside"):
        server.start(70000)
    assert server.address() is None


# --- the client's own checks ------------------------------------------------------------------

def test_parse_addresses():
    assert client.parse_addresses("grpc://localhost:6009") == [("localhost", 6009)]
    assert client.parse_addresses("a:1, b:2") == [("a", 1), ("b", 2)]
    assert client.parse_addresses("[::1]:7") == [("::1", 7)]
    assert client.parse_addresses("m:6009", worker_list="w1,w2:7000") == [("w1", 6009),
                                                                           ("w2", 7000)]
    for bad, why in [("localhost", "has no port"), ("a:b", "is not a number"),
                     ("a:0", "is not a host:port"), ("", "no address")]:
        with pytest.raises(ValueError, match=why):
            client.parse_addresses(bad)


def test_trace_checks_its_arguments_before_asking_anyone(tmp_path):
    dead = f"127.0.0.1:{free_port()}"
    with pytest.raises(ValueError, match="duration_ms=0 must be an integer in"):
        client.trace(dead, str(tmp_path), 0)
    with pytest.raises(ValueError, match="num_tracing_attempts=0 must be >= 1"):
        client.trace(dead, str(tmp_path), 10, num_tracing_attempts=0)
    with pytest.raises(ValueError, match="unknown options"):
        client.trace(dead, str(tmp_path), 10, options={"host_tracer": 2})
    with pytest.raises(TypeError, match="options must be a ProfilerOptions or a dict"):
        client.trace(dead, str(tmp_path), 10, options=3)


def test_monitor(serve):
    addr = serve(FakeRecorder())
    text = client.monitor(addr, 30)
    assert text.startswith("worker 0: step 11.00 ms (median of 1): input 9%, forward 27%, "
                           "backward 36%, optimizer 9%, allreduce 0%, wait 0%, checkpoint 0%, "
                           "other 18%")
    text2 = client.monitor(addr, 30, level=2)
    assert "most self time: backward (backward) 4.00 ms" in text2
    assert "bottleneck: rank 0 is compute-bound" in text2
    with pytest.raises(ValueError, match="level=3 must be 1 or 2"):
        client.monitor(addr, 30, level=3)
    dead = f"127.0.0.1:{free_port()}"
    assert f"no answer from {dead}" in client.monitor(dead, 10)
