"""ParameterServerStrategy under real ``mpiexec --with-ft ulfm`` jobs (issue 14): roles and
``Server.join``, updates from four workers at once, a closure's error, workers killed with
SIGKILL (by PID) while training, a killed parameter server, a killed chief, and a job launched
without ULFM. The scripts are ``scripts/ps_*.py``; the references are counts (every closure
succeeds once, the counter equals the increments the server applied) and the time limits of
the issue (10 s)."""
import collections
import json
import time
from pathlib import Path

import pytest

ULFM = ("--with-ft", "ulfm")
pytestmark = pytest.mark.timeout(150)


def result(job):
    lines = [ln for ln in job.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, str(job)
    return json.loads(lines[0][len("RESULT "):])


def test_roles_server_join_concurrent_updates_and_errors(mpirun, tmp_path):
    n = 50
    job = mpirun("ps_basics.py", 6, timeout=120, args=(tmp_path, n), mpiexec_args=ULFM)
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    r = result(job)
    assert r["cluster"] == {"chief": ["mpi-rank-0"], "ps": ["mpi-rank-1"],
                            "worker": [f"mpi-rank-{i}" for i in range(2, 6)]}
    roles = sorted(ln for ln in job.stdout.splitlines() if ln.startswith("ROLE"))
    assert roles == ["ROLE rank 0 chief:0", "ROLE rank 1 ps:0"] + \
        [f"ROLE rank {i} worker:{i - 2}" for i in range(2, 6)]
    joined = sorted(ln for ln in job.stdout.splitlines() if ln.startswith("JOINED"))
    assert joined == ["JOINED ps:0"] + [f"JOINED worker:{i}" for i in range(4)]
    assert r["num_workers"] == 4
    assert r["after_concurrent"] == 4 * n and r["concurrent_pids_are_workers"]
    assert r["after_single"] == 8 * n
    assert r["workers_used"] == [0, 1, 2, 3]
    assert r["fetch_error"] == r["join_error"] == "closure input 3 is bad"
    assert r["after_error"] == 7


def test_killed_workers_closures_run_again(mpirun, tmp_path):
    closures, kills = 60, (10, 30)
    job = mpirun("ps_worker_kill.py", 5, timeout=120, args=(tmp_path, closures, *kills),
                 mpiexec_args=ULFM)
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    r = result(job)
    assert [k["rank"] for k in r["killed"]] == [2, 3]
    assert r["workers_left"] == 1
    # every RemoteValue resolved to a loss
    assert all(isinstance(v, float) for v in r["values"]), r["values"]
    # every closure succeeded exactly once; the other attempts were lost with their worker
    attempts = r["attempts"]
    ok = collections.Counter(a[0] for a in attempts if a[4] == "succeeded")
    assert ok == {i: 1 for i in range(closures)}
    lost = [a for a in attempts if a[4] != "succeeded"]
    assert {a[4] for a in lost} <= {"worker lost"} and {a[3] for a in lost} <= {2, 3}
    assert len(attempts) == closures + len(lost)
    # the counter counts the attempts whose increment reached the server (at least once):
    # once for every successful attempt, at most once for a lost one
    updates = r["counter_updates"]
    assert r["counter"] == sum(updates.values())
    assert all(updates.get(f"{a[0]}:{a[1]}") == 1 for a in attempts if a[4] == "succeeded")
    assert all(updates.get(f"{a[0]}:{a[1]}", 0) <= 1 for a in lost)
    assert r["iterations"] >= closures
    assert sum(r["values"][-10:]) < sum(r["values"][:10])      # it trained


def test_killed_parameter_server_raises_within_10_s(mpirun, tmp_path):
    job = mpirun("ps_kill_ps.py", 4, timeout=120, args=(tmp_path,), mpiexec_args=ULFM)
    assert not job.timed_out and not job.leftover, str(job)
    r = result(job)
    for call in ("join", "fetch", "schedule", "done"):
        assert r[call]["type"] == "UnavailableError", r
        assert "parameter server ps:0 (rank 1) was lost" in r[call]["message"]
        assert r[call]["seconds_after_kill"] < 10
    assert job.returncode == 0, str(job)


def test_killed_chief_ends_every_process_within_10_s(mpirun, tmp_path):
    job = mpirun("ps_chief_loss.py", 4, timeout=120, args=(tmp_path,), mpiexec_args=ULFM)
    ended = time.time()
    assert not job.timed_out and not job.leftover, str(job)
    killed = float(Path(tmp_path, "killed").read_text())
    assert ended - killed < 10, str(job)
    # every process is gone (no leftover, above); the lines saying why reach us unless mpiexec
    # ends the job first and drops a rank's last output (seen once in CI: 2 of the 3 lines)
    assert 1 <= job.stderr.count("the chief was lost; exiting") <= 3, str(job)
    assert "NOT REACHED" not in job.stdout


def test_without_ulfm_a_lost_worker_ends_the_job_saying_how_to_relaunch(mpirun, tmp_path):
    job = mpirun("ps_worker_kill.py", 4, timeout=120, args=(tmp_path, 400, 10))
    assert not job.timed_out and not job.leftover, str(job)
    assert job.returncode != 0
    assert "relaunch with `mpiexec --with-ft ulfm" in job.stderr, str(job)
    assert "RESULT" not in job.stdout


def test_the_example_trains(mpirun):
    job = mpirun(Path(__file__).parents[2] / "examples" / "ps_training.py", 4, timeout=120,
                 args=("--closures", 20), mpiexec_args=ULFM)
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    assert "optimizer.iterations = 20" in job.stdout
    assert "attempts: {'succeeded': 20}" in job.stdout
    assert "20 closures in" in job.stdout and "on 2 workers" in job.stdout
