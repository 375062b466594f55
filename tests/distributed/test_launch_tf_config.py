"""Launching with TF's ``TF_CONFIG`` (issue 31, item 1): the tutorial's per-worker TF_CONFIG
under ``mpiexec -n 2`` trains as one job (as the same job without TF_CONFIG); a TF_CONFIG that
disagrees with the ranks, or two plain processes (no ``mpiexec``) with the tutorial's
TF_CONFIG, fail at once with a message naming both views, never train alone.

Every child is bounded in time (60 s; a job takes a few seconds, a failure well under 5).
"""
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, SCRIPTS, kill_session, mpi_env

pytestmark = pytest.mark.timeout(300)

BOUND_S = 60


def tutorial(index, cluster=None):
    """TF's multi-worker tutorial's TF_CONFIG for worker ``index``."""
    cluster = cluster or {"worker": ["localhost:12345", "localhost:23456"]}
    task = index if isinstance(index, dict) else {"type": "worker", "index": index}
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})}


def load(out, rank):
    return np.load(out / f"{rank}.npz")


def test_per_rank_tf_config_under_mpiexec_trains_as_one_job(mpirun, tmp_path):
    plain, tf_config, chief = tmp_path / "plain", tmp_path / "tf_config", tmp_path / "chief"
    for d in (plain, tf_config, chief):
        d.mkdir()
    job = mpirun("launch_tf_config.py", 2, timeout=BOUND_S, args=(plain,))
    assert job.returncode == 0 and not job.timed_out, str(job)
    job = mpirun("launch_tf_config.py", 2, timeout=BOUND_S, args=(tf_config,),
                 per_rank_env=[tutorial(0), tutorial(1)])
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    # a chief and a worker: TF numbers the chief 0, the workers after it
    cluster = {"chief": ["host-a:2222"], "worker": ["host-b:2222"]}
    job = mpirun("launch_tf_config.py", 2, timeout=BOUND_S, args=(chief,),
                 per_rank_env=[tutorial({"type": "chief", "index": 0}, cluster),
                               tutorial({"type": "worker", "index": 0}, cluster)])
    assert job.returncode == 0 and not job.timed_out, str(job)
    ref = load(plain, 0)
    assert str(ref["resolver"]) == "MPIClusterResolver"
    for out, tasks in ((tf_config, ("worker:0", "worker:1")), (chief, ("chief:0", "worker:0"))):
        for rank in (0, 1):
            got = load(out, rank)
            assert str(got["resolver"]) == "TFConfigClusterResolver"   # TF's default
            assert str(got["task"]) == tasks[rank]
            assert (int(got["worker_index"]), int(got["num_workers"]), int(got["replicas"])) \
                == (rank, 2, 2)
            # one job: every rank reports the job's losses and ends with the same weights,
            # those of the same job numbered by MPI alone (rank 1 is seeded differently)
            np.testing.assert_array_equal(got["loss"], ref["loss"], err_msg=f"{out.name} {rank}")
            np.testing.assert_array_equal(got["weights"], ref["weights"])
    assert np.all(np.diff(ref["loss"]) < 0)      # it trained


@pytest.mark.parametrize("case", ["same_tf_config_on_every_rank", "swapped"])
def test_tf_config_disagreeing_with_mpi_fails_at_once(mpirun, tmp_path, case):
    if case == "same_tf_config_on_every_rank":
        # TF_CONFIG exported once for mpiexec: both ranks claim worker 0
        job = mpirun("launch_tf_config.py", 2, timeout=BOUND_S, args=(tmp_path,),
                     env=tutorial(0))
        expected = ["TF_CONFIG says this process is task worker:0 (number 0 of 2, counting "
                    "the chief first, then the workers), but MPI says it is rank 1 of 2"]
    else:
        job = mpirun("launch_tf_config.py", 2, timeout=BOUND_S, args=(tmp_path,),
                     per_rank_env=[tutorial(1), tutorial(0)])
        expected = [f"TF_CONFIG says this process is task worker:{1 - r} (number {1 - r} of 2, "
                    f"counting the chief first, then the workers), but MPI says it is rank {r} "
                    f"of 2" for r in (0, 1)]
    assert job.returncode != 0 and not job.timed_out, str(job)
    output = " ".join(job.output.split())
    # every rank fails at once; the launcher may end the others before they print, so the
    # message of one rank at least (each is exact)
    found = [t for t in expected if f"ValueError: MultiWorkerMirroredStrategy: {t}" in output]
    assert found, str(job)
    assert not list(tmp_path.glob("*.npz"))       # nobody trained


def test_tutorial_tf_config_without_mpiexec_fails_in_both_processes(tmp_path):
    # the tutorial's launch: one plain process per worker, each with its TF_CONFIG
    procs = []
    t0 = time.monotonic()
    for index in (0, 1):
        procs.append(subprocess.Popen(
            [sys.executable, str(SCRIPTS / "launch_tf_config.py"), str(tmp_path)], cwd=ROOT,
            env=mpi_env(tutorial(index)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=BOUND_S)
            results.append((p.returncode, out + err, time.monotonic() - t0))
    finally:
        for p in procs:
            kill_session(p.pid)
    for index, (code, output, seconds) in enumerate(results):
        output = " ".join(output.split())
        assert code != 0, output
        assert (f"ValueError: MultiWorkerMirroredStrategy: TF_CONFIG says this process is task "
                f"worker:{index} (number {index} of 2, counting the chief first, then the "
                f"workers), but MPI says it is rank 0 of 1: it was not launched as a rank of "
                f"an MPI job") in output, output
        assert "`mpiexec -n 2 python script.py`" in output
        print(f"worker {index}: failed after {seconds:.1f} s")
    assert not list(tmp_path.glob("*.npz"))       # neither trained alone


PS_CLUSTER = {"chief": ["host-c:2222"], "ps": ["host-p:2222"],
              "worker": ["host-w0:2222", "host-w1:2222"]}
PS_TASKS = [{"type": "chief", "index": 0}, {"type": "ps", "index": 0},
            {"type": "worker", "index": 0}, {"type": "worker", "index": 1}]


def test_parameter_server_roles_from_per_rank_tf_config(mpirun):
    # TF's tutorial code on every task; the ranks in the order chief, ps, workers
    job = mpirun("ps_tf_config.py", 4, timeout=BOUND_S, mpiexec_args=("--with-ft", "ulfm"),
                 per_rank_env=[tutorial(t, PS_CLUSTER) for t in PS_TASKS])
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    roles = sorted(ln for ln in job.stdout.splitlines() if ln.startswith("ROLE"))
    assert roles == ["ROLE chief:0 rank 0", "ROLE ps:0 rank 1", "ROLE worker:0 rank 2",
                     "ROLE worker:1 rank 3"]
    result = [json.loads(ln[len("RESULT "):]) for ln in job.stdout.splitlines()
              if ln.startswith("RESULT ")]
    assert len(result) == 1, str(job)
    # every closure's five updates applied once; closures run by the TF_CONFIG's workers
    assert result[0]["task"] == "chief:0" and result[0]["counter"] == 40.0, str(job)
    assert set(result[0]["workers"]) <= {0, 1} and result[0]["workers"], str(job)


def test_parameter_server_roles_disagreeing_with_mpi_fail_at_once(mpirun):
    # the ps and the first worker swapped: every task's check sees it before MPI starts
    tasks = [PS_TASKS[0], PS_TASKS[2], PS_TASKS[1], PS_TASKS[3]]
    job = mpirun("ps_tf_config.py", 4, timeout=BOUND_S, mpiexec_args=("--with-ft", "ulfm"),
                 per_rank_env=[tutorial(t, PS_CLUSTER) for t in tasks])
    assert job.returncode != 0 and not job.timed_out, str(job)
    output = " ".join(job.output.split())
    assert ("Server: TF_CONFIG says this process is task worker:0 (number 2 of 4, counting the "
            "chief, then the ps tasks, then the workers), but MPI says it is rank 1 of 4"
            in output or
            "Server: TF_CONFIG says this process is task ps:0 (number 1 of 4, counting the "
            "chief, then the ps tasks, then the workers), but MPI says it is rank 2 of 4"
            in output), str(job)
    assert "RESULT" not in job.stdout
