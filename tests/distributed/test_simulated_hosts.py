"""Jobs across several hosts on one machine (``_hosts.py``: a network and UTS namespace per
host, Open MPI over TCP between them, its daemons started in each namespace): 2 hosts x 2 ranks.

MultiWorkerMirroredStrategy trains as one process does (``scripts/mw_equivalence.py``, the
same checks as ``test_multiworker.py``), with the gradients' all-reduce hierarchical (shared
memory inside a host, MPI between hosts), chosen by itself and named in the job's stderr; the
hierarchical plan's rounds are checked against NumPy's sums directly (``scripts/hosts_plan.py``).
Skipped, with the reason, where namespaces cannot be made (not root, no ``ip``/``unshare``).
"""
import json
import subprocess
import sys

import numpy as np
import pytest

from _hosts import SimulatedHosts, hosts_missing
from conftest import SCRIPTS, assert_trains_as_one_process, mpi_missing, one_process_reference

pytestmark = pytest.mark.timeout(300)

# pinned: Open MPI's ob1 over its shared memory inside a host and TCP between hosts
TRANSPORT = ("--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp")


@pytest.fixture(scope="module")
def hosts():
    reason = mpi_missing() or hosts_missing()
    if reason:
        pytest.skip(reason)
    with SimulatedHosts(2) as made:
        yield made
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert made.tag not in listed, listed          # every namespace is gone
    assert not made.namespace_pids()


def test_hosts_are_separate(hosts):
    """Each host has its own hostname and address, and reaches the other over the link."""
    for i, ns in enumerate(hosts.namespaces):
        got = subprocess.run(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                              f"hostname {hosts.hosts[i]}; hostname; ip -4 -o addr show; "
                              f"ping -c 1 -W 5 {hosts.address(1 - i)} >/dev/null && echo reached"],
                             capture_output=True, text=True, timeout=30)
        lines = got.stdout.split("\n")
        assert lines[0] == hosts.hosts[i], got
        addrs = [line.split()[3] for line in lines[1:] if " inet " in line]
        assert sorted(addrs) == sorted(["127.0.0.1/8", f"{hosts.address(i)}/24"]), got
        if "ping" not in got.stderr:        # no ping installed: the MPI jobs show the link
            assert "reached" in got.stdout, got


def test_hierarchical_plan_rounds(hosts):
    job = hosts.mpiexec([sys.executable, str(SCRIPTS / "hosts_plan.py")], ranks_per_host=2,
                        timeout=120, mpiexec_args=TRANSPORT)
    assert job.returncode == 0 and not job.timed_out, str(job)
    assert job.stdout.count("PLAN OK") == 4, str(job)
    assert "all-reduce plan: hierarchical across 2 hosts" in job.stderr, str(job)
    assert job.leftover == [], job.leftover


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return one_process_reference(tmp_path_factory.mktemp("ref"), timeout=120)


def test_two_hosts_train_as_one_process(hosts, tmp_path, reference):
    job = hosts.mpiexec([sys.executable, str(SCRIPTS / "mw_equivalence.py"), str(tmp_path)],
                        ranks_per_host=2, timeout=300, mpiexec_args=TRANSPORT)
    assert job.returncode == 0 and not job.timed_out, str(job)
    assert job.leftover == [], job.leftover
    # chosen by itself, named once: shared memory inside each host, MPI between them
    log = [line for line in job.stderr.splitlines() if "all-reduce plan" in line]
    assert log == [f"[tnp_train rank 0] all-reduce plan: hierarchical across 2 hosts "
                   f"({hosts.hosts[0]}: ranks 0-1, {hosts.hosts[1]}: ranks 2-3): shared memory "
                   f"inside each host, MPI between the hosts' lowest ranks"], job.stderr
    ref = reference
    for rank in range(4):
        got = np.load(tmp_path / f"{rank}.npz")
        # ranks 1-3 were seeded differently: they start from worker 0's weights
        assert_trains_as_one_process(got, ref, rank)
        for kind in ("mlp", "cnn", "noisy", "extras"):
            np.testing.assert_array_equal(got[f"{kind}_fit_acc"], ref[f"{kind}_fit_acc"])
            np.testing.assert_allclose(got[f"{kind}_fit_pred"], ref[f"{kind}_fit_pred"],
                                       rtol=1e-5, atol=1e-6)


def test_elastic_training_survives_a_whole_host(hosts, tmp_path):
    """Under ``--with-ft ulfm`` with the elastic opt-in, rank 2 kills every rank of its host
    (ranks 2 and 3) before step 5; the ranks of host 0 shrink to a 2-rank job and finish with
    one process's weights (``scripts/mw_elastic.py``, as ``test_elastic.py``). Open MPI's daemon
    on host 1 lives on: Open MPI 5.0's runtime ends the job when it loses a daemon, ULFM or
    not (``SimulatedHosts.kill_host``)."""
    job = hosts.mpiexec([sys.executable, str(SCRIPTS / "mw_elastic.py"), str(tmp_path), 2, 5,
                         "begin"], ranks_per_host=2, timeout=150,
                        mpiexec_args=("--with-ft", "ulfm", *TRANSPORT),
                        env={"TNP_COLLECTIVE_TIMEOUT": "30", "MW_KILL_HOST": "1"})
    assert job.returncode == 0 and not job.timed_out, str(job)
    assert job.leftover == [], job.leftover
    for r in (0, 1):
        path = tmp_path / f"{r}.npz"
        assert path.exists(), f"rank {r} wrote nothing\n{job}"
        d = np.load(path)
        np.testing.assert_allclose(d["weights"], d["ref"], rtol=1e-5, atol=1e-6)
        # one change, 4 workers to 2, at step 5 of an epoch of 4 steps: both of host 1's ranks
        assert d["events"].tolist() == [[4, 2, 5 % 4]], f"rank {r}"
        assert json.loads(d["lost"].item()) == [[2, 3]], f"rank {r}"
        assert int(d["workers"]) == 2 and int(d["new_rank"]) == r
        # the kill to the survivors' first completed step (reported, not bounded here)
        assert np.isfinite(float(d["recovery_s"])), f"rank {r}"
        print(f"rank {r}: from host 1's death to the first step on the survivors: "
              f"{float(d['recovery_s']) * 1e3:.0f} ms")
    for r in (2, 3):
        assert not (tmp_path / f"{r}.npz").exists()


def test_parameter_server_survives_a_whole_host(tmp_path):
    """3 hosts x 2 ranks: host 0 the chief and the ps, hosts 1 and 2 two workers each. After
    10 closures the chief kills every rank of host 1 (workers 2 and 3); every closure still
    succeeds exactly once, on the workers of host 2 (``scripts/ps_worker_kill.py``)."""
    reason = mpi_missing() or hosts_missing()
    if reason:
        pytest.skip(reason)
    closures = 40
    with SimulatedHosts(3) as three:
        job = three.mpiexec([sys.executable, str(SCRIPTS / "ps_worker_kill.py"), str(tmp_path),
                             closures, 10, "--kill-host"], ranks_per_host=2, timeout=150,
                            mpiexec_args=("--with-ft", "ulfm", *TRANSPORT))
    assert job.returncode == 0 and not job.timed_out and not job.leftover, str(job)
    lines = [ln for ln in job.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, str(job)
    r = json.loads(lines[0][len("RESULT "):])
    assert [k["ranks"] for k in r["killed"]] == [[2, 3]]
    assert r["workers_left"] == 2
    assert all(isinstance(v, float) for v in r["values"]), r["values"]
    attempts = r["attempts"]
    ok = {}
    for a in attempts:
        if a[4] == "succeeded":
            ok[a[0]] = ok.get(a[0], 0) + 1
    assert ok == {i: 1 for i in range(closures)}
    lost = [a for a in attempts if a[4] != "succeeded"]
    assert {a[4] for a in lost} <= {"worker lost"} and {a[3] for a in lost} <= {2, 3}
    # the counter counts each successful attempt once and a lost one at most once
    updates = r["counter_updates"]
    assert all(updates.get(f"{a[0]}:{a[1]}") == 1 for a in attempts if a[4] == "succeeded")
    assert all(updates.get(f"{a[0]}:{a[1]}", 0) <= 1 for a in lost)
    # the first closure started after the kill finishes on a survivor (reported, not bounded)
    killed_at = r["killed"][0]["at_monotonic"]
    after = [t[1] for a, t in zip(attempts, r["attempt_times"])
             if a[4] == "succeeded" and t[0] >= killed_at]
    assert after, r
    print(f"from host 1's death to the first closure started after it finishing: "
          f"{(min(after) - killed_at) * 1e3:.0f} ms")
