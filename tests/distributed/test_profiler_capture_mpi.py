"""Capture on demand from a running 2-rank ``mpiexec`` job by a separate process
(``scripts/prof_capture_mpi.py``): both workers answer, their traces and the merged trace are
written, the collectives of the same ``seq`` end together on the merged clock, and the report
names rank 1 (it sleeps 200 ms in every step) as the rank that rank 0 waits for.

Timings are asserted as structure, so that a loaded machine cannot fail it: "together" is
within a step (a 200 ms sleep and more), and the waits are compared with each other, with the
injected sleep from below and with the step from above, never with a few milliseconds."""
import json
import os
import re
import socket
import statistics

import pytest

from tnp_train.profiler import report as R
from tnp_train.profiler.merge import read_trace

pytestmark = pytest.mark.timeout(150)

LATE_MS = 200.0


def two_free_ports():
    """A port p with p + 1 also free (each rank binds p + its local rank)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            p = a.getsockname()[1]
            if p >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", p + 1))
                except OSError:
                    continue
            return p
    pytest.skip("no two consecutive free ports")


def test_capture_from_a_running_two_rank_job(mpirun, tmp_path):
    port = two_free_ports()
    job = mpirun("prof_capture_mpi.py", 2, timeout=130, args=(tmp_path, port, 3000))
    assert job.returncode == 0 and not job.timed_out, str(job)
    assert f"rank 0 of 2 serves captures at 127.0.0.1:{port}" in job.stderr
    assert f"rank 1 of 2 serves captures at 127.0.0.1:{port + 1}" in job.stderr
    cap = json.load(open(tmp_path / "capture.json"))
    assert cap["returncode"] == 0, cap
    assert cap["epochs"] >= 2                      # training went on during the capture
    written = re.findall(r"^wrote (.*)$", cap["stdout"], re.M)
    assert [os.path.basename(p) for p in written][-1] == "merged.trace.json.gz"
    assert sorted(int(os.path.basename(p).split(".")[-4]) for p in written[:-1]) == [0, 1]

    merged = read_trace(written[-1])
    ends = {r: {e["args"]["seq"]: e["ts"] + e["dur"] for e in merged["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") == "collective" and e["pid"] == r}
            for r in (0, 1)}
    seqs = sorted(set(ends[0]) & set(ends[1]))
    assert len(seqs) >= 8, ends
    gaps = [abs(ends[0][s] - ends[1][s]) for s in seqs]

    rep = R.report(tmp_path / "logs")
    assert sorted(rep["workers"]) == ["0", "1"]
    steps = {r: [s for s in w["steps"]] for r, w in rep["workers"].items()}
    assert min(len(s) for s in steps.values()) >= 4, steps
    step0 = statistics.median(s["step_ms"] for s in steps["0"])
    # one clock for both workers: a collective ends on both within a step of each other (the
    # ranks leave it together; two clocks would put the ends apart by their difference)
    assert statistics.median(gaps) < 1000.0 * step0, (gaps, step0)
    wait0 = statistics.median(s["wait_ms"] for s in steps["0"])
    wait1 = statistics.median(s["wait_ms"] for s in steps["1"])
    # rank 0 waits for rank 1's sleep (load only adds to that); rank 1 waits far less
    assert wait0 >= 0.5 * LATE_MS and wait1 < 0.5 * wait0, (wait0, wait1)
    m = re.fullmatch(r"rank 1 is (.*): (\d+)% of its step (.*); rank 0 waits ([\d.]+) ms for it",
                     rep["bottleneck"])
    assert m, rep["bottleneck"]
    # the wait it reports is rank 0's mean per step: at least half the sleep, at most a step
    assert 0.5 * LATE_MS <= float(m.group(4)) <= max(s["step_ms"] for s in steps["0"]), \
        rep["bottleneck"]
