"""The collective layer under real ``mpiexec`` jobs (2 and 3 ranks): results, events, buckets,
and every failure ending the job with an error that names the ranks, never a hang.

The scripts (tests/distributed/scripts/coll_*.py) assert the values on every rank themselves
(against NumPy on all ranks' inputs) and print ``ALL OK``; these tests check that every rank got
there, and for the failures, the error text, how long the job took and that no process is left.
Time bounds are loose (2 shared cores, 4 ranks, and other work on them): each is at least 10
times what it takes on a quiet machine, and "at once" means well inside the 60 s default
timeout, not a fraction of a second.
"""
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(200)


def _all_ok(job, n):
    assert job.returncode == 0 and not job.timed_out, str(job)
    for rank in range(n):
        assert f"[rank {rank}] ALL OK" in job.stdout, str(job)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_collectives_give_numpys_results_on_every_rank(mpirun, n):
    job = mpirun("coll_ops.py", n, timeout=120, args=("--ranks", n))
    _all_ok(job, n)
    # every section ran (the script stops at the first failed assert)
    for section in ("allreduce exact: 196 cases", "allreduce identical bits",
                    "allreduce results never alias", "allreduce_async ok", "allgather ok",
                    "broadcast ok", "objects and barrier ok", "events ok", "bucketer ok",
                    "bucketer compression ok"):
        assert f"[rank 0] {section}" in job.stdout, str(job)


def test_mismatched_calls_fail_at_once_naming_every_rank(mpirun):
    job = mpirun("coll_mismatch.py", 2, timeout=60)
    _all_ok(job, 2)
    lines = {}
    for m in re.finditer(r"\[rank (\d)\] MISMATCH (\w+) ([\d.]+) (.*)", job.stdout):
        lines[(int(m[1]), m[2])] = (float(m[3]), m[4])
    assert len(lines) == 2 * 8, str(job)
    for (rank, case), (seconds, message) in lines.items():
        assert seconds < 2.0, (rank, case, seconds)       # at once, not after a timeout
    # both ranks name both calls
    for rank in (0, 1):
        assert lines[(rank, "shape")][1].endswith(
            "rank 0: allreduce (sum) float32 (3,); rank 1: allreduce (sum) float32 (4,)")
        assert "rank 0: allreduce (sum) float32 (3,); rank 1: allreduce (sum) float64 (3,)" \
            in lines[(rank, "dtype")][1]
        assert "rank 1: allreduce (max) float32 (3,)" in lines[(rank, "op")][1]
        assert "called different collectives" in lines[(rank, "kind")][1]
        assert "rank 1: broadcast (root 0) float32 (3,)" in lines[(rank, "kind")][1]
        assert re.search(r"rank 0: allreduce \(sum\) float32 \((\d+), 2\); rank 1: allreduce "
                         r"\(sum\) float32 \(\1, 3\)", lines[(rank, "large")][1])
        assert "rank 0: allgather int64 (2, 5); rank 1: allgather int64 (2, 6)" \
            in lines[(rank, "allgather")][1]
        assert "(root 0) float64 (2,); rank 1: broadcast (root 1)" in lines[(rank, "root")][1]
        # through the fast path of signatures seen before
        assert lines[(rank, "seen")][1].endswith(
            "rank 0: allreduce (sum) float32 (5,); rank 1: allreduce (sum) float32 (6,)")


@pytest.mark.parametrize("mode", ["sync", "bucketer"])
def test_a_stalled_rank_is_named_and_the_job_aborted(mpirun, mode):
    n = 3 if mode == "sync" else 2
    stalled = n - 1
    # the job ends with the abort, long before the stalled rank's hour of sleep is over
    job = mpirun("coll_stall.py", n, timeout=100, env={"TNP_COLLECTIVE_TIMEOUT": "5"},
                 args=(mode,))
    assert not job.timed_out, str(job)
    assert job.returncode != 0 and "NOT REACHED" not in job.stdout, str(job)
    # the warning at half the timeout and the error at the timeout name the stalled rank
    if mode == "sync":
        what = r"allreduce #1 \(sum\) float32 \(\d+,\)"
        never = "never arrived"
    else:   # the bucketer's shared-memory plan (two ranks on this machine), its second round
        what = r"shared-memory allreduce \(sum\) of buffer 0 \(1001 x float32\), round 2"
        never = "never came to start it"
    # (not before its time; how late is the load's, not the layer's)
    warned = re.search(rf"CollectiveStallWarning: \[rank 0\] {what} has waited (\d+\.\d) s "
                       rf"for rank {stalled} ", job.stderr)
    assert warned and 2.5 <= float(warned[1]) < 5.0, str(job)
    failed = re.search(rf"CollectiveTimeoutError: \[rank 0\] {what} timed out after "
                       rf"(\d+\.\d) s: rank {stalled} {never}", job.stderr)
    assert failed and float(failed[1]) >= 5.0, str(job)
    assert "MPI_ABORT was invoked" in job.stderr
    assert job.leftover == []


def test_a_rank_that_raises_ends_the_job_at_once(mpirun):
    # the default 60 s timeout: the job must end because of the raise, not a timeout
    job = mpirun("coll_raise.py", 2, timeout=40)
    assert not job.timed_out and job.returncode != 0, str(job)
    assert "RuntimeError: boom on rank 1" in job.stderr
    assert "[rank 1] uncaught RuntimeError: aborting the MPI job" in job.stderr
    assert "NOT REACHED" not in job.stdout
    assert job.seconds < 30, str(job)
    assert job.leftover == []


def test_a_rank_that_returns_early_makes_the_others_fail_clearly(mpirun):
    job = mpirun("coll_early_exit.py", 2, timeout=40)
    assert not job.timed_out and job.returncode != 0, str(job)
    m = re.search(r"\[rank 0\] PEER EXIT after ([\d.]+) s: \[rank 0\] allreduce #2 \(sum\) "
                  r"float64 \(4,\): rank 1 ended its process \(without an error\) after 2 "
                  r"collective\(s\), without joining this one", job.stdout)
    assert m, str(job)
    # at once, not after the 60 s default timeout (rank 1 may still be ending its process on a
    # loaded machine when rank 0 gets there: rank 0 then waits for that too)
    assert float(m[1]) < 20.0
    assert job.seconds < 30, str(job)
    assert job.leftover == []


def test_the_allreduce_benchmark_runs(mpirun):
    """A smoke run of benchmarks/allreduce.py (tiny sizes, one repeat): no figure asserted."""
    root = Path(__file__).resolve().parents[2]
    job = mpirun(root / "benchmarks" / "allreduce.py", 2, timeout=60,
                 args=("--sizes", "4K,2M", "--repeats", "1", "--target-ms", "5"))
    assert job.returncode == 0, str(job)
    data = json.loads(next(ln for ln in job.stdout.splitlines() if ln.startswith("JSON "))[5:])
    assert [row["bytes"] for row in data["sizes"]] == [4096, 2 << 20]
    assert all(row["ratio"] > 0 for row in data["sizes"])
    assert data["latency_1xf32_us"]["layer"] > 0


@pytest.mark.parametrize("n", [2, 3])
def test_persistent_allreduce_plans_in_shared_memory(mpirun, n):
    job = mpirun("coll_plan.py", n, timeout=90, args=("ops",))
    _all_ok(job, n)
    assert "[rank 0] plan ok: 234 cases" in job.stdout, str(job)


def test_persistent_allreduce_layouts_that_differ_fail_naming_both(mpirun):
    job = mpirun("coll_plan.py", 2, timeout=60, args=("mismatch",))
    _all_ok(job, 2)
    for rank in (0, 1):
        m = re.search(rf"\[rank {rank}\] MISMATCH ([\d.]+) (.*)", job.stdout)
        assert m and float(m[1]) < 2.0, str(job)
        assert "rank 0: op sum, 1 buffers [(10, '<f4')]" in m[2], m[2]
        assert "rank 1: op sum, 1 buffers [(11, '<f4')]" in m[2], m[2]


def test_persistent_allreduce_a_rank_that_leaves_is_named(mpirun):
    job = mpirun("coll_plan.py", 2, timeout=60, args=("leave",))
    assert not job.timed_out, str(job)
    assert "[rank 1] leaving" in job.stdout, str(job)
    assert re.search(r"\[rank 0\] LEFT .*rank 1 ended its process \(without an error\)",
                     job.stdout), str(job)
