"""``python -m tnp_train.profiler report|capture`` and the trace files' helpers (merge, names,
run folders)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from prof_traces import X, fit_steps, worker_trace, write_run
from tnp_train.profiler import report as R
from tnp_train.profiler.__main__ import main
from tnp_train.profiler.experimental import server
from tnp_train.profiler.merge import (merge_traces, new_run_dir, read_trace, trace_file_name,
                                      write_trace)


@pytest.fixture
def logdir(tmp_path):
    write_run(tmp_path, [worker_trace(fit_steps(3, wait_ms=6, allreduce_ms=1), rank=0, host="a"),
                         worker_trace(fit_steps(3, input_ms=7, allreduce_ms=1), rank=1,
                                      host="b")])
    return tmp_path


def test_report_json_is_the_report(logdir, capsys):
    assert main(["report", str(logdir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == R.report(logdir)
    assert set(out) >= {"workers", "bottleneck"}
    step = out["workers"]["1"]["steps"][0]
    assert list(step) == ["step", "step_ms", "input_ms", "forward_ms", "backward_ms",
                          "optimizer_ms", "allreduce_ms", "wait_ms", "checkpoint_ms", "other_ms",
                          "name"]
    assert step["name"] == "train_step"
    # rank 1: 4 gaps of 0.5 + input 7 + forward 3 + backward 4 + transfer 1 + optimizer 1
    # = 18 ms, 7 / 18 = 39% input
    assert out["bottleneck"] == ("rank 1 is input-bound: 39% of its step waits for data; "
                                 "rank 0 waits 6 ms for it")


def test_report_text_and_html(logdir, capsys, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(logdir), "--html", str(page), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out == R.format_text(R.report(logdir), top=2) + f"wrote {page}\n"
    assert "rank 1 is input-bound" in page.read_text()
    assert main(["report", str(logdir), "--json", "--html", str(page)]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)                                  # stdout stays pure JSON
    assert captured.err == f"wrote {page}\n"


def test_report_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none")]) == 1
    assert "report failed: profiler report: no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report"])


def test_capture_cli(tmp_path, capsys):
    def collect(duration_s, options):
        assert options == {"host_tracer_level": 1, "delay_ms": 0}
        return worker_trace(fit_steps(2), host="w0")

    addr = server.start(0, _collect=collect)
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = f"127.0.0.1:{s.getsockname()[1]}"
        code = main(["capture", "--service", f"{addr},{dead}", "--duration-ms", "20",
                     "--num-tracing-attempts", "1", "--host-tracer-level", "1",
                     "--delay-ms", "0", str(tmp_path)])
        captured = capsys.readouterr()
        assert code == 1
        assert f"no trace from {dead}: ConnectionRefusedError" in captured.err
        lines = captured.out.splitlines()
        assert lines[0].startswith("wrote ") and lines[0].endswith("w0.0.trace.json.gz")
        assert lines[1].endswith("merged.trace.json.gz")
        assert len(R.report(tmp_path)["workers"]["0"]["steps"]) == 2
        assert main(["capture", "--service", addr, "--duration-ms", "20",
                     "--host-tracer-level", "1", "--delay-ms", "0", str(tmp_path)]) == 0
        assert main(["capture", "--service", dead, "--duration-ms", "20",
                     "--num-tracing-attempts", "1", str(tmp_path)]) == 1
        assert "capture failed: profiler capture: no worker answered" in capsys.readouterr().err
    finally:
        server.stop()


def test_python_dash_m_entry_point(logdir):
    proc = subprocess.run([sys.executable, "-m", "tnp_train.profiler", "report", str(logdir),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bottleneck"].startswith("rank 1 is input-bound")


# --- trace files -------------------------------------------------------------------------------

def test_merge_aligns_clocks_and_keeps_ranks_apart():
    t0 = worker_trace([X("s", "step", 1, 1)], rank=0, host="a")
    t1 = worker_trace([X("s", "step", 1, 1)], rank=1, host="b", offset_us=-50_000.0,
                      dropped=3)
    t1b = worker_trace([X("s", "step", 2, 1)], rank=1, host="c", offset_us=25.0)
    m = merge_traces([t0, t1, t1b])
    xs = {(e["pid"], e["ts"]) for e in m["traceEvents"] if e["ph"] == "X"}
    assert xs == {(0, 1000.0), (1, 1000.0 - 50_000.0), (2, 2025.0)}
    names = {e["pid"]: e["args"]["name"] for e in m["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {0: "worker 0 (a)", 1: "worker 1 (b)", 2: "worker 1 (c) [also rank 1]"}
    assert m["metadata"]["ranks"] == [0, 1, 2] and m["metadata"]["dropped_events"] == 3
    assert m["metadata"]["clock_offset_us"] == {"0": 0.0, "1": -50_000.0, "2": 25.0}
    phs = [e["ph"] for e in m["traceEvents"]]
    assert phs == sorted(phs, key=lambda p: p != "M")        # metadata first
    assert t1["traceEvents"][-1]["ts"] == 1000.0             # the inputs are not modified


def test_write_read_round_trip_and_names(tmp_path):
    tr = worker_trace(fit_steps(1))
    write_trace(tmp_path / "x.trace.json.gz", tr)
    assert read_trace(tmp_path / "x.trace.json.gz") == tr
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]   # no temp left behind
    assert trace_file_name("node-1.example.com", 3) == "node-1.example.com.3.trace.json.gz"
    assert trace_file_name("a/b c", 0) == "a_b_c.0.trace.json.gz"


def test_new_run_dir_names_by_time_and_never_reuses(tmp_path):
    when = 1767225599.0          # some second; the name is that local time
    a, b = new_run_dir(tmp_path, now=when), new_run_dir(tmp_path, now=when)
    name = os.path.basename(a)
    assert len(name.split("_")) == 6 and all(p.isdigit() for p in name.split("_"))
    assert b == a + "_1"
    assert os.path.dirname(a) == os.path.join(str(tmp_path), "plugins", "profile")
